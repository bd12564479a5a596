// The replay page: a run's exported videos (one per player's camera), a scrubber with the
// events and story picks marked, speed, camera choice; "Play from here" forks the run.
(function () {
  "use strict";
  const root = document.getElementById("replay");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const video = $("replay-video"), overlay = $("replay-overlay"), scrubber = $("replay-scrubber");
  const toggle = $("replay-toggle"), speed = $("replay-speed"), camera = $("replay-camera");
  const timeOut = $("replay-time"), marksBar = $("replay-marks"), log = $("replay-log");
  const status = $("replay-status"), message = $("replay-message"), download = $("replay-download");
  const fork = $("replay-fork"), publish = $("replay-publish"), cover = $("replay-cover");
  let rec = null, exportAsked = false, scrubbing = false;

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }
  async function call(url, method, body) {
    const res = await fetch(url, {
      method, credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = {};
    try { data = await res.json(); } catch (e) { /* 204 */ }
    return { ok: res.ok, status: res.status, data };
  }
  function say(text) { message.textContent = text || ""; }
  function detail(data) {
    if (data.detail) return data.detail;
    const first = Object.values(data)[0];
    return Array.isArray(first) ? first[0] : "Something went wrong.";
  }
  const fps = () => (rec && rec.fps) || 24;
  const clock = (s) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, "0")}`;
  function frameNow() {
    const frames = rec ? rec.cameras[camera.value] || rec.frames : 0;
    return Math.max(0, Math.min(frames - 1, Math.floor(video.currentTime * fps() + 1e-3)));
  }
  function showTime() {
    const total = rec ? (rec.cameras[camera.value] || rec.frames) / fps() : 0;
    timeOut.textContent = `${clock(video.currentTime || 0)} / ${clock(Math.round(total))}`;
    if (!scrubbing) scrubber.value = frameNow();
  }
  function seekFrame(frame) {
    video.currentTime = (frame + 0.5) / fps();
    showTime();
  }

  function drawMarks() {
    marksBar.textContent = "";
    log.textContent = "";
    const frames = Math.max(1, rec.frames);
    for (const mark of rec.marks) {
      const pin = document.createElement("button");
      pin.type = "button";
      pin.className = `replay-mark replay-mark-${mark.kind}`;
      pin.style.left = `${(100 * mark.frame) / frames}%`;
      pin.title = `${mark.by ? mark.by + ": " : ""}${mark.text}`;
      pin.addEventListener("click", () => seekFrame(mark.frame));
      marksBar.appendChild(pin);
      const item = document.createElement("li");
      item.className = `play-event replay-log-${mark.kind}`;
      const at = document.createElement("button");
      at.type = "button";
      at.className = "replay-at";
      at.textContent = clock(mark.frame / fps());
      at.addEventListener("click", () => seekFrame(mark.frame));
      item.append(at, ` ${mark.kind === "pick" ? "Story: " : mark.by ? mark.by + ": " : ""}${mark.text}`);
      log.appendChild(item);
    }
    if (!rec.marks.length) {
      const item = document.createElement("li");
      item.className = "play-event";
      item.textContent = "Nothing was typed in this run.";
      log.appendChild(item);
    }
  }

  function setVideo() {
    const url = rec.videos[camera.value] || rec.video_url;
    if (!url) return;
    const at = video.currentTime || 0, playing = !video.paused;
    if (video.getAttribute("src") !== url) {
      video.src = url;
      video.addEventListener("loadedmetadata", () => {
        video.currentTime = at;
        video.playbackRate = Number(speed.value);
        if (playing) video.play();
      }, { once: true });
    }
    download.href = url;
    download.hidden = false;
    download.setAttribute("download", `${rec.world}-run-camera-${camera.value}.mp4`);
    overlay.hidden = true;
    toggle.disabled = scrubber.disabled = false;
  }

  function render() {
    status.textContent = {
      none: "Not exported", queued: "Queued", rendering: `Rendering ${rec.video_progress}%`,
      ready: "Ready", failed: "Failed",
    }[rec.video_status] || rec.video_status;
    scrubber.max = Math.max(0, (rec.cameras[camera.value] || rec.frames) - 1);
    if (publish) publish.textContent = rec.public ? "Make private" : "Publish run";
    if (cover) cover.hidden = !rec.public;
    if (!rec.weights_match) {
      overlay.textContent = "This run was made by other world model weights: it cannot be drawn again.";
      fork.disabled = true;
      return false;
    }
    if (!rec.complete) { overlay.textContent = "This run is still being written…"; return true; }
    if (rec.frames === 0) { overlay.textContent = "Nothing was played in this run."; return false; }
    if (rec.video_status === "ready") { setVideo(); return false; }
    if (rec.video_status === "failed" && exportAsked) {
      overlay.textContent = "The replay could not be drawn. Try again later.";
      return false;
    }
    overlay.textContent = rec.video_status === "rendering"
      ? `Drawing the replay… ${rec.video_progress}%` : "Drawing the replay…";
    return true;
  }

  async function refresh() {
    const res = await call(root.dataset.api, "GET");
    if (!res.ok) { overlay.textContent = detail(res.data); return; }
    rec = res.data;
    if (!log.childElementCount) drawMarks();
    if (rec.complete && rec.weights_match && rec.frames > 0 && !exportAsked &&
        (rec.video_status === "none" || rec.video_status === "failed")) {
      exportAsked = true;
      const started = await call(`${root.dataset.api}export/`, "POST");
      if (started.ok) rec = started.data; else if (started.status !== 409) say(detail(started.data));
    }
    if (render()) setTimeout(refresh, 1500);
  }

  toggle.addEventListener("click", () => (video.paused ? video.play() : video.pause()));
  video.addEventListener("play", () => { toggle.textContent = "Pause"; toggle.setAttribute("aria-label", "Pause"); });
  video.addEventListener("pause", () => { toggle.textContent = "Play"; toggle.setAttribute("aria-label", "Play"); });
  video.addEventListener("timeupdate", showTime);
  video.addEventListener("seeked", showTime);
  scrubber.addEventListener("input", () => { scrubbing = true; seekFrame(Number(scrubber.value)); });
  scrubber.addEventListener("change", () => { scrubbing = false; });
  speed.addEventListener("change", () => { video.playbackRate = Number(speed.value); });
  camera.addEventListener("change", () => rec && render());
  fork.addEventListener("click", async () => {
    fork.disabled = true;
    video.pause();
    say("Starting a new world from this moment…");
    const res = await call(`${root.dataset.api}fork/`, "POST",
      { frame: Number(scrubber.value), slot: Number(camera.value) });
    if (res.ok) { window.location.href = root.dataset.play; return; }
    fork.disabled = false;
    say(detail(res.data));
  });
  if (publish) publish.addEventListener("click", async () => {
    const res = await call(root.dataset.api, "PATCH", { public: !rec.public });
    if (res.ok) { rec = res.data; render(); say(rec.public ? "Published: anyone can watch this run." : "This run is private."); }
    else say(detail(res.data));
  });
  if (cover) cover.addEventListener("click", async () => {
    const res = await call(`${root.dataset.api}cover/`, "POST");
    say(res.ok ? "The world's card will play this run (ready in a moment)." : detail(res.data));
  });
  refresh();
})();
