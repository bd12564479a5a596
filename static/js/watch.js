// The watch page: the same frame stream as the player's, read-only, with the viewer count, the
// story so far and its options, or the conversation (narrative.js). The socket, the canvas and
// the HUD: live_view.js.
(() => {
  "use strict";

  const root = document.getElementById("watch");
  if (!root) return;
  const { attachScreen, openSocket } = window.ParallaxLiveView;
  const viewers = document.getElementById("hud-viewers");
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
  const narrative = window.ParallaxNarrative.attach(); // no onPick: read-only

  const socket = openSocket({
    path: root.dataset.socket,
    noRetry: new Set([4403, 4404, 4410]), // forbidden, private or gone, ended
    screen,
    onFrame: screen.draw,
    onJson(msg) {
      if (narrative.handle(msg) || msg.type !== "status") return;
      if (typeof msg.viewers === "number") viewers.textContent = msg.viewers;
      if (msg.state === "ended") socket.stop();
      screen.setState(msg.state);
    },
    onGiveUp(code, stopped) {
      if (!stopped) {
        screen.setState("ended", code === 4404 ? "This session is private or gone." : undefined);
      }
    },
  });
})();
