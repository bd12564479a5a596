// Who is in a shared world: the presence list of the play and watch pages (protocol v1
// "presence", and "players" on "status"). `ParallaxPresence.attach({list, count, onRemove})`
// returns {update(players)}; each player shows as a colour dot, their name and "you" on your own
// line; a player whose socket closed (their seat kept for the reconnect grace) is marked
// "reconnecting…", one whose socket has not opened yet "joining…". With onRemove (the
// session's creator), every other player gets a "Remove" button and onRemove(player) is called
// when it is pressed.
(() => {
  "use strict";

  const COLOR = /^#[0-9a-f]{3,8}$/i; // only a CSS hex reaches the style attribute
  const AWAY = { reconnecting: "reconnecting…", joining: "joining…" }; // presence "state"s

  function attach({ list, count, onRemove } = {}) {
    let players = [];
    let canRemove = Boolean(onRemove);

    function row(player) {
      const li = document.createElement("li");
      li.className = "presence-player";
      li.dataset.slot = String(player.slot);
      if (player.you) li.classList.add("is-you");
      const dot = document.createElement("span");
      dot.className = "presence-dot";
      dot.setAttribute("aria-hidden", "true");
      if (COLOR.test(player.color || "")) dot.style.background = player.color;
      const name = document.createElement("span");
      name.className = "presence-name";
      name.textContent = player.name;
      li.append(dot, name);
      const away = Object.hasOwn(AWAY, player.state) ? AWAY[player.state] : "";
      if (away) {
        li.classList.add(`is-${player.state}`);
        const state = document.createElement("span");
        state.className = "presence-state";
        state.textContent = away;
        li.append(state);
      }
      if (player.you) {
        const you = document.createElement("span");
        you.className = "presence-you";
        you.textContent = "you";
        li.append(you);
      } else if (canRemove) {
        const remove = document.createElement("button");
        remove.type = "button";
        remove.className = "link-button presence-remove";
        remove.textContent = "Remove";
        remove.setAttribute("aria-label", `Remove ${player.name}`);
        remove.addEventListener("click", () => onRemove(player));
        li.append(remove);
      }
      return li;
    }

    function render() {
      if (!list) return;
      list.replaceChildren(...players.map(row));
      list.dataset.count = String(players.length);
      if (count) count.textContent = String(players.length);
    }

    return {
      update(next) {
        if (!Array.isArray(next)) return;
        players = next.slice().sort((a, b) => a.slot - b.slot);
        render();
      },
      // The creator's Remove buttons appear once the page knows it is the creator.
      allowRemove(allowed) {
        canRemove = Boolean(onRemove) && allowed;
        render();
      },
      players: () => players.slice(),
    };
  }

  window.ParallaxPresence = { attach };
})();
