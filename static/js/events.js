// A world-events list, shared by the play and watch pages: `line(by, text, {you, color})` is one
// entry (who sent it, then what), and `replayGate(list)` decides on the last events a socket is
// sent when it (re)joins: shown only on an empty list (a reload), not again after a reconnect
// that kept the page.
(() => {
  "use strict";

  function line(by, text, { you = false, color = null } = {}) {
    const li = document.createElement("li");
    const who = document.createElement("b");
    who.className = "event-by";
    who.textContent = by;
    if (color) who.style.color = color;
    const what = document.createElement("span");
    what.className = "event-text";
    what.textContent = text;
    li.append(who, " ", what);
    if (you) li.classList.add("is-you");
    return li;
  }

  // -> show(msg): false for a replayed event the list already holds.
  function replayGate(list) {
    let replaying = false;
    return (msg) => {
      if (typeof msg.history !== "number") return true;
      if (msg.history === 0) replaying = list.children.length === 0;
      return replaying;
    };
  }

  window.ParallaxEvents = { line, replayGate };
})();
