// The play page: create (or resume) a session, stream its frames, send held keys and world
// events over protocol v1, show the latency, end the session. The socket, the canvas and the
// shared HUD: live_view.js; held keys and the d-pad: controls.js; story picks and dialogue:
// narrative.js.
(() => {
  "use strict";

  const root = document.getElementById("play");
  if (!root) return;
  const { attachScreen, openSocket } = window.ParallaxLiveView;
  const canvas = document.getElementById("play-canvas");
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
  const screen = attachScreen({
    root, canvas, overlay, hud,
    messages: {
      queued: "Waiting for a free world engine…",
      starting: "Generating the world…",
      resuming: "Resuming where you were…",
      ended: "This session has ended.",
      live: "",
    },
  });
  const narrative = window.ParallaxNarrative.attach({
    onPick: (choiceId, option) => send({ type: "choose", choice_id: choiceId, option }),
  });
  const controls = window.ParallaxControls.attach({
    pad: document.getElementById("touch-pad"),
    onChange: sendInput,
  });
  root.dataset.touch = String(controls.isTouch);

  // forbidden, gone, replaced, ended, flooding
  const NO_RETRY = new Set([4403, 4404, 4409, 4410, 4429]);
  const END_REASONS = {
    player: "you ended it",
    idle: "no input for a while",
    max_length: "it reached the maximum length",
    abandoned: "you were away too long",
    switched: "you opened another world",
    moderator: "a moderator ended it",
    worker: "the world engine stopped",
    failed: "the world could not be generated",
  };

  let session = null;
  let socket = null;
  let seq = 0;
  let latencies = [];
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

  async function start() {
    try {
      session = await api("POST", root.dataset.api, { world: root.dataset.world });
    } catch (err) {
      screen.setState("ended", err.message);
      screen.setConnection("not connected");
      return;
    }
    root.dataset.session = session.id;
    if (session.watch_url) {
      const link = document.getElementById("watch-link");
      link.href = session.watch_url;
      link.hidden = false;
    }
    socket = openSocket({
      path: session.play_socket,
      noRetry: NO_RETRY,
      screen,
      onOpen: () => { if (controls.held().length) sendInput(); },
      onFrame,
      onJson,
      onGiveUp: (code, stopped) => { if (!stopped) screen.setState("ended", closeReason(code)); },
    });
  }

  function closeReason(code) {
    if (code === 4429) return "Disconnected: too many messages.";
    if (code === 4409) return "This session is open in another tab.";
    if (code === 4403 || code === 4404) return "This session is not yours to play.";
    return "This session has ended.";
  }

  function onJson(msg) {
    if (narrative.handle(msg)) return;
    if (msg.type === "status") {
      if (typeof msg.viewers === "number") hud.viewers.textContent = msg.viewers;
      hud.queue.textContent = msg.state === "queued" && msg.position ? `#${msg.position}` : "—";
      if (msg.state === "ended") socket.stop();
      screen.setState(msg.state, msg.state === "queued" && msg.position
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

  function onFrame(frame) {
    const sent = sentAt.get(frame.appliedSeq);
    if (sent !== undefined) {
      latencies.push(performance.now() - sent);
      for (const key of sentAt.keys()) if (key <= frame.appliedSeq) sentAt.delete(key);
    }
    screen.draw(frame);
  }

  function send(message) {
    if (socket) socket.send(message);
  }

  function sendInput() {
    seq += 1;
    sentAt.set(seq, performance.now());
    if (sentAt.size > 256) sentAt.delete(sentAt.keys().next().value);
    send({ type: "input", seq, keys: controls.held() });
  }

  // 1 and 2 pick a story option, unless a text box is being typed in.
  window.addEventListener("keydown", (event) => {
    if ((event.key === "1" || event.key === "2") && !window.ParallaxControls.typing(event.target)
        && !event.ctrlKey && !event.metaKey && !event.altKey) {
      narrative.pick(Number(event.key) - 1);
    }
  });
  // Held keys are repeated so a lost message never leaves the avatar stuck or stopped.
  setInterval(() => { if (controls.held().length) sendInput(); }, 250);
  setInterval(() => send({ type: "ping", t: Date.now() / 1000 }), 10000);

  setInterval(() => {
    if (!latencies.length) return;
    const sorted = latencies.slice().sort((a, b) => a - b);
    hud.latency.textContent = `${Math.round(sorted[Math.floor(sorted.length / 2)])} ms`;
    latencies = [];
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
    if (socket) socket.stop();
    try {
      await api("DELETE", `${root.dataset.api}${session.id}/`);
    } catch (err) {
      overlay.textContent = err.message;
    }
    screen.setState("ended");
  });

  canvas.focus();
  start();
})();
