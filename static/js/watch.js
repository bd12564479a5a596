// The watch page: the frames of the session's first player's camera, read-only, with the viewer
// count, who is playing (presence.js, without controls), the story so far with the audience's
// votes on its options, or the conversation (narrative.js), and what the players changed in the
// world (events.js; the last ones too, sent when this socket joined). The socket, the canvas and
// the HUD: live_view.js.
(() => {
  "use strict";

  const root = document.getElementById("watch");
  if (!root) return;
  const { attachScreen, openSocket } = window.ParallaxLiveView;
  const viewers = document.getElementById("hud-viewers");
  const presenceBox = document.getElementById("presence");
  const screen = attachScreen({
    root,
    canvas: document.getElementById("watch-canvas"),
    overlay: document.getElementById("watch-overlay"),
    hud: {
      state: document.getElementById("hud-state"),
      fps: document.getElementById("hud-fps"),
      connection: document.getElementById("hud-connection"),
    },
    messages: {
      queued: "The player is waiting in line…",
      starting: "The world is being generated…",
      resuming: "Resuming…",
      ended: "This session has ended.",
    },
  });
  let players = [];
  // Spectators vote as the audience: counted apart from the players' votes.
  const narrative = window.ParallaxNarrative.attach({
    onPick: (choiceId, option) => socket.send({ type: "vote", choice_id: choiceId, option }),
    colorFor: (slot) => colorOf(slot),
  });
  const presence = window.ParallaxPresence.attach({
    list: document.getElementById("presence-list"),
    count: document.getElementById("presence-count"),
  });

  // What the players did to the world: the changes applied, newest first (what the model could
  // not do, or moderation refused, is the sender's business).
  const events = document.getElementById("watch-events");
  const showEvent = window.ParallaxEvents.replayGate(events);
  const EVENTS_KEPT = 20;

  function onEvent(msg) {
    if (!showEvent(msg) || msg.status !== "applied") return;
    const li = window.ParallaxEvents.line(msg.by || "Someone", msg.text || "changed the world",
      { color: colorOf(msg.slot) });
    li.classList.add("applied");
    li.dataset.slot = String(msg.slot);
    events.prepend(li);
    while (events.children.length > EVENTS_KEPT) events.lastElementChild.remove();
  }

  function colorOf(slot) {
    return (players.find((p) => p.slot === slot) || {}).color || null;
  }

  function showPlayers(list) {
    // A spectator is none of them, whatever a message says.
    players = list.map((p) => ({ ...p, you: false }));
    // The last events come before the players are known: their names take colour now.
    for (const li of events.children) {
      const color = colorOf(Number(li.dataset.slot));
      if (color) li.querySelector(".event-by").style.color = color;
    }
    presence.update(players);
    presenceBox.hidden = players.length === 0;
  }

  const socket = openSocket({
    path: root.dataset.socket,
    noRetry: new Set([4403, 4404, 4410]), // forbidden, private or gone, ended
    screen,
    onFrame: screen.draw,
    onJson(msg) {
      if (narrative.handle(msg)) return;
      if (msg.type === "event") {
        onEvent(msg);
        return;
      }
      if (msg.type === "presence") {
        showPlayers(msg.players || []);
        return;
      }
      if (msg.type !== "status") return;
      if (Array.isArray(msg.players)) showPlayers(msg.players);
      if (typeof msg.viewers === "number") viewers.textContent = msg.viewers;
      if (msg.state === "ended") {
        socket.stop();
        const join = document.getElementById("join-link");
        if (join) join.hidden = true;
      }
      screen.setState(msg.state);
    },
    onGiveUp(code, stopped) {
      if (!stopped) {
        screen.setState("ended", code === 4404 ? "This session is private or gone." : undefined);
      }
    },
  });
})();
