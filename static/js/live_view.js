// What the play and watch pages share: the socket to a session (reconnecting by itself),
// protocol v1 frame decoding, drawing frames on the canvas, the state overlay and the HUD's
// state, connection and FPS. play.js adds the controls and the latency; watch.js is read-only.
(() => {
  "use strict";

  const HEADER = 12; // b"PX", version u8, flags u8, frame number u32, last applied input seq u32

  const FPS_WINDOW_MS = 2000;

  // A binary message as {number, appliedSeq, jpeg}, or null when it is not a v1 frame.
  function decodeFrame(buffer) {
    if (buffer.byteLength <= HEADER) return null;
    const view = new DataView(buffer);
    if (view.getUint8(0) !== 0x50 || view.getUint8(1) !== 0x58) return null; // "PX"
    return {
      number: view.getUint32(4),
      appliedSeq: view.getUint32(8),
      jpeg: new Blob([new Uint8Array(buffer, HEADER)], { type: "image/jpeg" }),
    };
  }

  // The canvas, its overlay and the HUD cells the pages have in common. `messages` maps a
  // state to the overlay's text. The page's root element carries data-state, data-connection,
  // data-frames (last frame drawn) and data-applied-seq (the input seq that frame echoed).
  function attachScreen({ root, canvas, overlay, hud, messages }) {
    const ctx = canvas.getContext("2d");
    let lastDrawn = -1;
    const arrivals = []; // performance.now() of the frames of the last FPS_WINDOW_MS

    function setState(next, text) {
      hud.state.textContent = next;
      root.dataset.state = next;
      overlay.textContent = text || messages[next] || "";
    }

    function setConnection(text) {
      hud.connection.textContent = text;
      root.dataset.connection = text;
    }

    function draw(frame) {
      arrivals.push(performance.now());
      if (root.dataset.state !== "live") setState("live");
      createImageBitmap(frame.jpeg).then((bitmap) => {
        if (frame.number < lastDrawn && lastDrawn - frame.number < 1e6) return; // out of order
        lastDrawn = frame.number;
        // The canvas takes the frame's own size; CSS scales it up, pixelated (play.css).
        if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
          canvas.width = bitmap.width;
          canvas.height = bitmap.height;
        }
        ctx.imageSmoothingEnabled = false;
        ctx.drawImage(bitmap, 0, 0);
        bitmap.close();
        root.dataset.frames = String(frame.number);
        root.dataset.appliedSeq = String(frame.appliedSeq);
      }).catch(() => {});
    }

    // Frames a second over the last two seconds of arrivals. A count per whole second read 7
    // in the first second of a 24 fps session and 0 before its first tick: "—" until the
    // frames span a quarter second, 0 once they stop.
    setInterval(() => {
      const now = performance.now();
      while (arrivals.length && now - arrivals[0] > FPS_WINDOW_MS) arrivals.shift();
      const n = arrivals.length;
      const span = n ? arrivals[n - 1] - arrivals[0] : 0;
      if (n && now - arrivals[n - 1] < 1000) {
        if (span >= 250) hud.fps.textContent = String(Math.round(((n - 1) * 1000) / span));
      } else if (lastDrawn >= 0) {
        hud.fps.textContent = "0";
      }
    }, 500);

    return { setState, setConnection, draw, state: () => root.dataset.state };
  }

  // A session socket that reconnects with backoff until stop() or a close code in `noRetry`;
  // then onGiveUp(code, stopped). Binary messages go to onFrame as decoded frames, text to onJson.
  function openSocket({ path, noRetry, screen, onOpen, onFrame, onJson, onGiveUp }) {
    let ws = null;
    let stopped = false;
    let retryDelay = 500;

    function connect() {
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      ws = new WebSocket(scheme + location.host + path);
      ws.binaryType = "arraybuffer";
      screen.setConnection("connecting");
      ws.onopen = () => {
        screen.setConnection("open");
        retryDelay = 500;
        if (onOpen) onOpen();
      };
      ws.onmessage = (message) => {
        if (stopped) return;
        if (!(message.data instanceof ArrayBuffer)) return onJson(JSON.parse(message.data));
        const frame = decodeFrame(message.data);
        if (frame) onFrame(frame);
      };
      ws.onclose = (event) => {
        ws = null;
        if (stopped || noRetry.has(event.code)) {
          screen.setConnection("closed");
          onGiveUp(event.code, stopped);
          return;
        }
        screen.setConnection(`reconnecting in ${(retryDelay / 1000).toFixed(1)} s`);
        setTimeout(connect, retryDelay);
        retryDelay = Math.min(retryDelay * 2, 8000);
      };
    }

    connect();
    return {
      send(message) {
        if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
      },
      stop() {
        stopped = true;
        if (ws) ws.close(1000);  // left or ended: nothing more from this session
      },
    };
  }

  window.ParallaxLiveView = { attachScreen, openSocket, decodeFrame };
})();
