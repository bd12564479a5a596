// The play page: create (or resume) a session, stream its frames onto the canvas, send held
// keys and world events over protocol v1, show the HUD, reconnect by itself. Story picks and
// dialogue: narrative.js.
(() => {
  "use strict";

  const root = document.getElementById("play");
  if (!root) return;
  const canvas = document.getElementById("play-canvas");
  const ctx = canvas.getContext("2d");
  const overlay = document.getElementById("play-overlay");
  const hud = {
    state: document.getElementById("hud-state"),
    queue: document.getElementById("hud-queue"),
    fps: document.getElementById("hud-fps"),
    latency: document.getElementById("hud-latency"),
    connection: document.getElementById("hud-connection"),
    viewers: document.getElementById("hud-viewers"),
  };
  const events = document.getElementById("play-events");
  const promptForm = document.getElementById("play-prompt");
  const promptText = document.getElementById("prompt-text");
  const chatForm = document.getElementById("chat-form");
  const chatText = document.getElementById("chat-text");
  const narrative = window.ParallaxNarrative.attach({
    onPick: (choiceId, option) => send({ type: "choose", choice_id: choiceId, option }),
  });

  const KEYMAP = {
    w: "w", a: "a", s: "s", d: "d", " ": "space",
    arrowup: "w", arrowleft: "a", arrowdown: "s", arrowright: "d",
  };
  const NO_RETRY = new Set([4403, 4404, 4409, 4410, 4429]); // forbidden, gone, replaced, ended, flooding
  const HEADER = 12;

  let session = null;
  let ws = null;
  let seq = 0;
  let state = "connecting";
  let ended = false;
  let retryDelay = 500;
  let lastDrawn = -1;
  let framesThisSecond = 0;
  let latencies = [];
  const held = new Set();
  const sentAt = new Map(); // seq -> performance.now() when sent
  const pendingEvents = new Map(); // seq -> <li>

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function api(method, url, body) {
    const response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.detail || `The server answered ${response.status}.`);
    return data;
  }

  function setState(next, extra) {
    state = next;
    hud.state.textContent = next;
    root.dataset.state = next;
    const messages = {
      queued: "Waiting for a free world engine…",
      starting: "Generating the world…",
      resuming: "Resuming where you were…",
      ended: "This session has ended.",
      live: "",
    };
    overlay.textContent = extra || messages[next] || "";
  }

  function setConnection(text) {
    hud.connection.textContent = text;
    root.dataset.connection = text;
  }

  async function start() {
    try {
      session = await api("POST", root.dataset.api, { world: root.dataset.world });
    } catch (err) {
      setState("ended", err.message);
      setConnection("not connected");
      return;
    }
    root.dataset.session = session.id;
    if (session.watch_url) {
      const link = document.getElementById("watch-link");
      link.href = session.watch_url;
      link.hidden = false;
    }
    connect();
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    ws = new WebSocket(scheme + location.host + session.play_socket);
    ws.binaryType = "arraybuffer";
    setConnection("connecting");
    ws.onopen = () => {
      setConnection("open");
      retryDelay = 500;
      if (held.size) sendInput();
    };
    ws.onmessage = (message) => {
      if (message.data instanceof ArrayBuffer) onFrame(message.data);
      else onJson(JSON.parse(message.data));
    };
    ws.onclose = (event) => {
      ws = null;
      if (ended || NO_RETRY.has(event.code)) {
        setConnection("closed");
        if (!ended) setState("ended", closeReason(event.code));
        return;
      }
      setConnection(`reconnecting in ${(retryDelay / 1000).toFixed(1)} s`);
      setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 8000);
    };
  }

  function closeReason(code) {
    if (code === 4429) return "Disconnected: too many messages.";
    if (code === 4409) return "This session is open in another tab.";
    if (code === 4403 || code === 4404) return "This session is not yours to play.";
    return "This session has ended.";
  }

  const END_REASONS = {
    player: "you ended it",
    idle: "no input for a while",
    max_length: "it reached the maximum length",
    abandoned: "you were away too long",
    moderator: "a moderator ended it",
    worker: "the world engine stopped",
    failed: "the world could not be generated",
  };

  function onJson(msg) {
    if (narrative.handle(msg)) return;
    if (msg.type === "status") {
      if (typeof msg.viewers === "number") hud.viewers.textContent = msg.viewers;
      hud.queue.textContent = msg.state === "queued" && msg.position ? `#${msg.position}` : "—";
      if (msg.state === "ended") ended = true;
      setState(msg.state, msg.state === "queued" && msg.position
        ? `Waiting for a free world engine: you are number ${msg.position} in line.`
        : msg.state === "ended" && msg.reason
          ? `This session has ended: ${END_REASONS[msg.reason] || msg.reason}.`
          : undefined);
    } else if (msg.type === "event") {
      const li = pendingEvents.get(msg.seq);
      if (li) {
        li.className = msg.status;
        if (msg.reason) li.title = msg.reason;
        if (msg.status === "rejected" && msg.reason) li.textContent += ` — ${msg.reason}`;
        pendingEvents.delete(msg.seq);
      }
    } else if (msg.type === "error") {
      if (msg.code === "blocked" && narrative.hasChat()) {
        narrative.addLine("not sent", msg.message, "chat-rejected");
        return;
      }
      const li = document.createElement("li");
      li.className = "rejected";
      li.textContent = msg.message;
      events.prepend(li);
    }
  }

  function onFrame(buffer) {
    if (buffer.byteLength <= HEADER) return;
    const view = new DataView(buffer);
    if (view.getUint8(0) !== 0x50 || view.getUint8(1) !== 0x58) return; // "PX"
    const frameNo = view.getUint32(4);
    const echoed = view.getUint32(8);
    const sent = sentAt.get(echoed);
    if (sent !== undefined) {
      latencies.push(performance.now() - sent);
      for (const key of sentAt.keys()) if (key <= echoed) sentAt.delete(key);
    }
    framesThisSecond += 1;
    if (state !== "live") setState("live");
    const blob = new Blob([new Uint8Array(buffer, HEADER)], { type: "image/jpeg" });
    createImageBitmap(blob).then((bitmap) => {
      if (frameNo < lastDrawn && lastDrawn - frameNo < 1e6) return; // arrived out of order
      lastDrawn = frameNo;
      if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
        canvas.width = bitmap.width;
        canvas.height = bitmap.height;
      }
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(bitmap, 0, 0);
      bitmap.close();
      root.dataset.frames = String(frameNo);
    }).catch(() => {});
  }

  function send(message) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  }

  function sendInput() {
    seq += 1;
    sentAt.set(seq, performance.now());
    if (sentAt.size > 256) sentAt.delete(sentAt.keys().next().value);
    send({ type: "input", seq, keys: [...held] });
  }

  function keyOf(event) {
    return KEYMAP[event.key.toLowerCase()];
  }

  function typing(event) {
    const target = event.target;
    return Boolean(target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA"
      || target.isContentEditable));
  }

  window.addEventListener("keydown", (event) => {
    if ((event.key === "1" || event.key === "2") && !typing(event)
        && !event.ctrlKey && !event.metaKey && !event.altKey) {
      narrative.pick(Number(event.key) - 1);
      return;
    }
    const key = keyOf(event);
    if (!key || typing(event) || event.ctrlKey || event.metaKey || event.altKey) return;
    event.preventDefault(); // arrows and space would scroll the page
    if (held.has(key)) return;
    held.add(key);
    sendInput();
  });
  window.addEventListener("keyup", (event) => {
    const key = keyOf(event);
    if (!key || !held.delete(key)) return;
    sendInput();
  });
  window.addEventListener("blur", () => {
    if (!held.size) return;
    held.clear();
    sendInput();
  });
  // Held keys are repeated so a lost message never leaves the avatar stuck or stopped.
  setInterval(() => { if (held.size) sendInput(); }, 250);
  setInterval(() => send({ type: "ping", t: Date.now() / 1000 }), 10000);

  setInterval(() => {
    hud.fps.textContent = String(framesThisSecond);
    framesThisSecond = 0;
    if (latencies.length) {
      const sorted = latencies.slice().sort((a, b) => a - b);
      hud.latency.textContent = `${Math.round(sorted[Math.floor(sorted.length / 2)])} ms`;
      latencies = [];
    }
  }, 1000);

  promptForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = promptText.value.trim();
    if (!text) return;
    const max = Number(root.dataset.maxPrompt || 500);
    if (text.length > max) return;
    seq += 1;
    const li = document.createElement("li");
    li.className = "pending";
    li.textContent = text;
    events.prepend(li);
    pendingEvents.set(seq, li);
    send({ type: "prompt", seq, text });
    promptText.value = "";
    canvas.focus();
  });

  if (chatForm) {
    chatForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const text = chatText.value.trim();
      if (!text) return;
      send({ type: "say", text: text.slice(0, Number(chatText.maxLength) || 500) });
      chatText.value = "";
    });
  }

  document.getElementById("end-session").addEventListener("click", async () => {
    if (!session) return;
    ended = true;
    try {
      await api("DELETE", `${root.dataset.api}${session.id}/`);
    } catch (err) {
      overlay.textContent = err.message;
    }
    setState("ended");
  });

  canvas.focus();
  start();
})();
