// The watch page: the same frame stream as the player's, read-only, with the viewer count, the
// story so far and its options, or the conversation (narrative.js).
(() => {
  "use strict";

  const root = document.getElementById("watch");
  if (!root) return;
  const canvas = document.getElementById("watch-canvas");
  const ctx = canvas.getContext("2d");
  const overlay = document.getElementById("watch-overlay");
  const hud = {
    state: document.getElementById("hud-state"),
    viewers: document.getElementById("hud-viewers"),
    fps: document.getElementById("hud-fps"),
    connection: document.getElementById("hud-connection"),
  };
  const NO_RETRY = new Set([4403, 4404, 4410]);
  const HEADER = 12;
  let ended = false;
  let retryDelay = 500;
  let framesThisSecond = 0;
  let lastDrawn = -1;
  const narrative = window.ParallaxNarrative.attach(); // no onPick: read-only

  function setState(state, text) {
    hud.state.textContent = state;
    root.dataset.state = state;
    const messages = {
      queued: "The player is waiting in line…",
      starting: "The world is being generated…",
      resuming: "Resuming…",
      ended: "This session has ended.",
    };
    overlay.textContent = text || messages[state] || "";
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const ws = new WebSocket(scheme + location.host + root.dataset.socket);
    ws.binaryType = "arraybuffer";
    hud.connection.textContent = "connecting";
    ws.onopen = () => {
      hud.connection.textContent = "open";
      retryDelay = 500;
    };
    ws.onmessage = (message) => {
      if (message.data instanceof ArrayBuffer) return onFrame(message.data);
      const msg = JSON.parse(message.data);
      if (narrative.handle(msg) || msg.type !== "status") return;
      if (typeof msg.viewers === "number") hud.viewers.textContent = msg.viewers;
      if (msg.state === "ended") ended = true;
      setState(msg.state);
    };
    ws.onclose = (event) => {
      if (ended || NO_RETRY.has(event.code)) {
        hud.connection.textContent = "closed";
        setState("ended", event.code === 4404 ? "This session is private or gone." : undefined);
        return;
      }
      hud.connection.textContent = "reconnecting";
      setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 8000);
    };
  }

  function onFrame(buffer) {
    if (buffer.byteLength <= HEADER) return;
    const view = new DataView(buffer);
    if (view.getUint8(0) !== 0x50 || view.getUint8(1) !== 0x58) return;
    const frameNo = view.getUint32(4);
    framesThisSecond += 1;
    if (root.dataset.state !== "live") setState("live");
    const blob = new Blob([new Uint8Array(buffer, HEADER)], { type: "image/jpeg" });
    createImageBitmap(blob).then((bitmap) => {
      if (frameNo < lastDrawn && lastDrawn - frameNo < 1e6) return;
      lastDrawn = frameNo;
      if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
        canvas.width = bitmap.width;
        canvas.height = bitmap.height;
      }
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(bitmap, 0, 0);
      bitmap.close();
    }).catch(() => {});
  }

  setInterval(() => {
    hud.fps.textContent = String(framesThisSecond);
    framesThisSecond = 0;
  }, 1000);
  connect();
})();
