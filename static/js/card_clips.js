// Gallery cards with a clip of a public run play it while the pointer (or focus) is on them;
// nothing is fetched until then (preload="none").
(function () {
  "use strict";
  function start(card) {
    const clip = card.querySelector(".card-clip");
    if (!clip) return;
    if (!clip.src) clip.src = clip.dataset.src;
    clip.currentTime = 0;
    clip.play().then(() => clip.classList.add("playing")).catch(() => {});
  }
  function stop(card) {
    const clip = card.querySelector(".card-clip");
    if (!clip) return;
    clip.pause();
    clip.classList.remove("playing");
  }
  document.addEventListener("pointerover", (e) => {
    const card = e.target.closest && e.target.closest(".card");
    if (card && !card.contains(e.relatedTarget)) start(card);
  });
  document.addEventListener("pointerout", (e) => {
    const card = e.target.closest && e.target.closest(".card");
    if (card && !card.contains(e.relatedTarget)) stop(card);
  });
  document.addEventListener("focusin", (e) => { const c = e.target.closest && e.target.closest(".card"); if (c) start(c); });
  document.addEventListener("focusout", (e) => { const c = e.target.closest && e.target.closest(".card"); if (c) stop(c); });
})();
