// The play page: create (or resume, or join) a shared session, stream its frames, send held keys
// and world events over protocol v1, show the latency, who is playing and what they did, and
// leave. The socket, the canvas and the shared HUD: live_view.js; held keys and the d-pad:
// controls.js; story votes and dialogue: narrative.js; the presence list: presence.js.
//
// /play/<slug>/ creates a shared session (the server returns the one you already play, or for a
// Live world its one public session); /play/<slug>/?session=<id> sits down in that session
// through the join endpoint, which returns your seat when you already have one.
(() => {
  "use strict";

  const root = document.getElementById("play");
  if (!root) return;
  const { attachScreen, openSocket } = window.ParallaxLiveView;
  const $ = (id) => document.getElementById(id);
  const canvas = $("play-canvas");
  const overlay = $("play-overlay");
  const hud = {
    state: $("hud-state"),
    queue: $("hud-queue"),
    fps: $("hud-fps"),
    latency: $("hud-latency"),
    connection: $("hud-connection"),
    viewers: $("hud-viewers"),
  };
  const events = $("play-events");
  const promptForm = $("play-prompt");
  const promptText = $("prompt-text");
  const chatForm = $("chat-form");
  const chatText = $("chat-text");
  const leaveButton = $("end-session");
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
  let players = []; // [{slot, name, color, you}]
  const narrative = window.ParallaxNarrative.attach({
    onPick: (choiceId, option) => send({ type: "choose", choice_id: choiceId, option }),
    colorFor: (slot) => (players.find((p) => p.slot === slot) || {}).color || null,
  });
  const presence = window.ParallaxPresence.attach({
    list: $("presence-list"),
    count: $("presence-count"),
    onRemove: askToRemove,
  });
  const controls = window.ParallaxControls.attach({
    pad: $("touch-pad"),
    onChange: sendInput,
  });
  root.dataset.touch = String(controls.isTouch);

  // forbidden, gone, replaced, ended, removed, flooding
  const NO_RETRY = new Set([4403, 4404, 4409, 4410, 4411, 4429]);
  const END_REASONS = {
    player: "you ended it",
    left: "you left it",
    empty: "every player left",
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
  let mySlot = null;
  let removedFor = null; // the reason, once the server said this player was removed
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
    if (!response.ok) {
      const detail = data.detail || Object.values(data).flat().join(" ");
      const err = new Error(detail || `The server answered ${response.status}.`);
      err.status = response.status;
      throw err;
    }
    return data;
  }

  // Your seat: the one in ?session=<id> (joined, idempotent), else a new or running session.
  function sitDown() {
    const params = new URLSearchParams(location.search);
    const id = params.get("session");
    if (!id) return api("POST", root.dataset.api, { world: root.dataset.world, shared: true });
    const invite = params.get("invite");
    return api("POST", `${root.dataset.api}${encodeURIComponent(id)}/join/`,
      invite ? { invite } : {});
  }

  function joinError(err) {
    if (err.status === 409) return "This world is full: every seat is taken.";
    if (err.status === 404) return "This session is private or has ended.";
    return err.message;
  }

  async function start() {
    try {
      session = await sitDown();
    } catch (err) {
      screen.setState("ended", joinError(err));
      screen.setConnection("not connected");
      return;
    }
    root.dataset.session = session.id;
    root.dataset.shared = String(Boolean(session.shared));
    if (session.shared && !new URLSearchParams(location.search).get("session")) {
      // A reload sits down in the same session instead of asking for a new one.
      const query = new URLSearchParams({ session: session.id });
      if (session.invite && !session.public) query.set("invite", session.invite);
      history.replaceState(null, "", `${location.pathname}?${query}`);
    }
    const you = session.you || session.player || null;
    if (you) mySlot = you.slot;
    if (session.players) showPlayers(session.players);
    // The remove endpoint takes accounts only: an anonymous creator gets no Remove buttons.
    presence.allowRemove(Boolean(session.is_creator));
    if (session.shared) leaveButton.textContent = "Leave";
    // Say so: a public session is on the Live page with a Join button for anyone.
    $("presence-public").hidden = !(session.shared && session.public);
    if (session.watch_url) {
      const link = $("watch-link");
      link.href = session.watch_url;
      link.hidden = false;
    }
    if (session.invite_url) $("play-together").hidden = false;
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
    if (code === 4411) return removedMessage();
    if (code === 4429) return "Disconnected: too many messages.";
    if (code === 4409) return "This session is open in another tab.";
    if (code === 4403 || code === 4404) return "This session is not yours to play.";
    return "This session has ended.";
  }

  // The server's message says it all ("You were removed from this session: <reason>").
  function removedMessage() {
    return removedFor || "You were removed from this world.";
  }

  // Players from the session JSON, "status" or "presence"; "you" comes from our own slot when
  // the message does not say.
  function showPlayers(list) {
    players = list.map((p) => ({ ...p, you: p.you === true || (mySlot !== null && p.slot === mySlot) }));
    presence.update(players);
    $("presence").hidden = players.length === 0;
  }

  function onJson(msg) {
    if (narrative.handle(msg)) return;
    if (msg.type === "status") onStatus(msg);
    else if (msg.type === "presence") showPlayers(msg.players || []);
    else if (msg.type === "event") onEvent(msg);
    else if (msg.type === "error") onError(msg);
  }

  function onStatus(msg) {
    if (typeof msg.you === "number") mySlot = msg.you;
    if (Array.isArray(msg.players)) showPlayers(msg.players);
    if (typeof msg.viewers === "number") hud.viewers.textContent = msg.viewers;
    hud.queue.textContent = msg.state === "queued" && msg.position ? `#${msg.position}` : "—";
    if (msg.state === "ended") { socket.stop(); offerReplay(); }
    screen.setState(msg.state, msg.state === "queued" && msg.position
      ? `Waiting for a free world engine: you are number ${msg.position} in line.`
      : msg.state === "ended" && msg.reason
        ? `This session has ended: ${END_REASONS[msg.reason] || msg.reason}.`
        : undefined);
  }

  // One line of the events list: who sent it (in their colour), then what.
  function eventLine(by, text, you) {
    const player = players.find((p) => p.name === by);
    return window.ParallaxEvents.line(by, text, { you, color: player && player.color });
  }

  const showEvent = window.ParallaxEvents.replayGate(events);

  function onEvent(msg) {
    const mine = typeof msg.you === "boolean" ? msg.you
      : msg.slot === undefined || msg.slot === null || msg.slot === mySlot;
    if (!showEvent(msg)) return;
    const replayed = typeof msg.history === "number";
    let li = mine && !replayed ? pendingEvents.get(msg.seq) : null;
    if (replayed) {
      li = eventLine(msg.by || "Someone", msg.text || "changed the world", mine);
      events.prepend(li);
    } else if (li) {
      pendingEvents.delete(msg.seq);
      if (msg.by) li.querySelector(".event-by").textContent = msg.by;
    } else if (!mine) {
      // Another player's event: it changed the world for everyone, so everyone sees it.
      li = eventLine(msg.by || "Someone", msg.text || "changed the world", false);
      events.prepend(li);
    } else {
      return;
    }
    li.classList.remove("pending");
    li.classList.add(msg.status);
    if (msg.reason) li.title = msg.reason;
    if ((msg.status === "rejected" || msg.status === "unsupported") && msg.reason) {
      li.querySelector(".event-text").textContent += ` — ${msg.reason}`;
    }
    if (msg.status === "unsupported" && mine && Array.isArray(msg.suggest) && msg.suggest.length) {
      li.append(suggestions(msg.suggest));
    }
  }

  // "try: …" buttons that put a suggestion into the prompt box.
  function suggestions(list) {
    const span = document.createElement("span");
    span.className = "event-suggest";
    span.append("Try: ");
    list.slice(0, 3).forEach((text, i) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "link-button";
      button.textContent = `“${text}”`;
      button.addEventListener("click", () => { promptText.value = text; promptText.focus(); });
      span.append(i ? " · " : "", button);  // they ran together: "a thunderstorm rolls in night falls"
    });
    return span;
  }

  function onError(msg) {
    if (msg.code === "removed") {
      removedFor = msg.message || null;
      socket.stop();
      screen.setState("ended", removedMessage());
      return;
    }
    if (msg.code === "blocked" && narrative.hasChat()) {
      narrative.addLine("not sent", msg.message, "chat-rejected");
      return;
    }
    const pending = pendingEvents.get(msg.seq);
    if (pending) {
      // an error answering one of my world events (too many waiting, not running yet)
      pendingEvents.delete(msg.seq);
      pending.classList.remove("pending");
      pending.classList.add("rejected");
      pending.querySelector(".event-text").textContent += ` — ${msg.message}`;
      return;
    }
    const li = document.createElement("li");
    li.className = "rejected";
    li.textContent = msg.message;
    events.prepend(li);
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

  // "Play together": the invite link on the clipboard, or in a text field to copy by hand.
  async function copyInvite() {
    const link = new URL(session.invite_url, location.origin).href;
    const field = $("invite-link");
    const status = $("invite-status");
    field.value = link;
    try {
      await navigator.clipboard.writeText(link);
      status.textContent = "Invite link copied";
    } catch {
      $("invite-box").hidden = false; // its label says what to do
      status.textContent = "";
      field.focus();
      field.select();
    }
  }

  // The creator removes a player, with a reason the player sees.
  let removing = null;
  const dialog = $("remove-dialog");

  function askToRemove(player) {
    removing = player;
    $("remove-name").textContent = player.name;
    $("remove-error").textContent = "";
    $("remove-reason").value = "";
    dialog.showModal();
  }

  $("remove-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const reason = $("remove-reason").value.trim();
    if (!reason || !removing) return;
    try {
      await api("POST", `${root.dataset.api}${session.id}/players/${removing.slot}/remove/`, { reason });
      dialog.close();
    } catch (err) {
      $("remove-error").textContent = err.message;
    }
  });
  $("remove-cancel").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => { removing = null; canvas.focus(); });

  // 1 and 2 pick a story option, unless a text box is being typed in.
  window.addEventListener("keydown", (event) => {
    if ((event.key === "1" || event.key === "2") && !window.ParallaxControls.typing(event.target)
        && !event.ctrlKey && !event.metaKey && !event.altKey && !dialog.open) {
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
    const me = players.find((p) => p.you);
    const li = eventLine(me ? me.name : "You", text, true);
    li.classList.add("pending");
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
      if (screen.state() !== "live") {
        // the server would refuse it and the line would be gone: it stays in the box
        narrative.addLine("not sent", "The world is not live yet; send it again once it is.",
          "chat-rejected");
        return;
      }
      send({ type: "say", text: text.slice(0, Number(chatText.maxLength) || 500) });
      chatText.value = "";
    });
  }

  $("play-together").addEventListener("click", () => { if (session) copyInvite(); });

  leaveButton.addEventListener("click", async () => {
    if (!session) return;
    if (socket) socket.stop();
    try {
      await api("DELETE", `${root.dataset.api}${session.id}/`);
    } catch (err) {
      overlay.textContent = err.message;
    }
    screen.setState("ended", session.shared ? "You left this world." : undefined);
    $("play-together").hidden = true;
    offerReplay();
  });

  // Once a session ends, its recording (written by the worker as it ends): a link to replay it.
  let replayOffered = ""; // the session whose recording is being looked for
  async function offerReplay() {
    if (!session || replayOffered === session.id) return;
    const ended = (replayOffered = session.id);
    for (let attempt = 0; attempt < 30 && session && session.id === ended; attempt += 1) {
      try {
        const run = await api("GET", `${root.dataset.api}${ended}/recording/`);
        if (run.frames > 0) {
          const link = $("replay-link");
          link.href = run.replay_url;
          link.hidden = false;
          return;
        }
      } catch (err) { /* not there yet, or never (a session that never ran) */ }
      await new Promise((done) => setTimeout(done, 1000));
    }
  }

  canvas.focus();
  start();
})();
