// Story picks and character dialogue (protocol v1 "choices" and "say"), shared by the play and
// watch pages: `ParallaxNarrative.attach({onPick, colorFor})` returns a handler for their JSON
// messages. In a shared world a pick is a vote: the options show the players' votes and the
// audience's apart, a countdown until the vote closes, and this page's own vote highlighted.
// onPick(choiceId, option) sends the vote (a player's "choose", a spectator's "vote");
// colorFor(slot) gives a player's colour for their chat lines.
(() => {
  "use strict";

  function plural(n, word) {
    return `${n} ${word}${n === 1 ? "" : "s"}`;
  }

  // "2 votes · audience 5"; empty while nobody has voted (a one-player story shows nothing).
  function tally(players, audience) {
    const parts = [];
    if (players > 0 || audience > 0) parts.push(plural(players, "vote"));
    if (audience > 0) parts.push(`audience ${audience}`);
    return parts.join(" · ");
  }

  function attach({ onPick, colorFor } = {}) {
    const lines = document.getElementById("story-lines");
    const choices = document.getElementById("story-choices");
    const countdown = document.getElementById("story-countdown");
    const chat = document.getElementById("chat-log");
    const buttons = choices ? [...choices.querySelectorAll(".story-option")] : [];
    let mine = { choiceId: null, option: null }; // this page's vote, until the server echoes it
    let closesAt = null; // performance.now() when the open vote closes

    function showVotes(msg, voted) {
      const votes = msg.votes || [];
      const audience = msg.audience || [];
      buttons.forEach((button, i) => {
        const label = button.querySelector(".story-votes");
        if (label) label.textContent = tally(Number(votes[i]) || 0, Number(audience[i]) || 0);
        button.classList.toggle("picked", voted === i);
        button.setAttribute("aria-pressed", String(voted === i));
      });
      choices.dataset.voted = voted === null ? "" : String(voted);
    }

    function tick() {
      if (!countdown) return;
      if (closesAt === null) {
        countdown.textContent = "";
        return;
      }
      const left = Math.max(0, Math.ceil((closesAt - performance.now()) / 1000));
      countdown.textContent = left > 0 ? `Vote closes in ${left} s` : "Counting the votes…";
    }

    function showChoices(msg) {
      if (!choices) return;
      // Each line after the opening under the option that was picked before it.
      const chosen = msg.chosen || [];
      lines.replaceChildren(...(msg.story || []).map((text, i) => {
        const li = document.createElement("li");
        if (chosen[i]) {
          const pick = document.createElement("span");
          pick.className = "story-chosen";
          pick.textContent = chosen[i];
          li.append(pick);
        }
        li.append(document.createTextNode(text));
        return li;
      }));
      lines.scrollTop = lines.scrollHeight;
      const choiceId = msg.choice_id || "";
      if (mine.choiceId !== choiceId) mine = { choiceId: null, option: null };
      // The server's word on this socket's vote wins; until it comes, the pick made here.
      const voted = typeof msg.voted === "number" ? msg.voted
        : mine.choiceId === choiceId ? mine.option : null;
      choices.dataset.choice = choiceId;
      buttons.forEach((button, i) => {
        button.querySelector(".story-label").textContent = (msg.options || [])[i] || "…";
        button.disabled = !onPick || !choiceId || voted !== null; // one vote per pair
      });
      showVotes(msg, voted);
      closesAt = typeof msg.closes_in === "number" && choiceId
        ? performance.now() + msg.closes_in * 1000 : null;
      tick();
    }

    // The reply being generated: partial lines rewrite it in place, the final line settles it.
    let streaming = null;
    let replaying = false; // a replay of the talk so far is being shown

    function addLine(speaker, text, className, partial = false, color = null) {
      if (!chat) return;
      let li = streaming && streaming.dataset.speaker === speaker ? streaming : null;
      if (!li) {
        li = document.createElement("li");
        chat.append(li);
      }
      li.className = className || "chat-them";
      li.classList.toggle("chat-partial", partial);
      li.dataset.speaker = speaker;
      const who = document.createElement("b");
      who.textContent = `${speaker}: `;
      if (color) who.style.color = color;
      li.replaceChildren(who, document.createTextNode(text));
      streaming = partial ? li : null;
      chat.scrollTop = chat.scrollHeight;
    }

    function addSay(msg) {
      const isPlayer = typeof msg.slot === "number";
      const className = msg.you ? "chat-you" : isPlayer ? "chat-player" : "chat-them";
      const color = isPlayer && colorFor ? colorFor(msg.slot) : null;
      addLine(msg.speaker, msg.text, className, msg.partial === true, color);
    }

    function pick(option) {
      const choiceId = choices && choices.dataset.choice;
      if (!onPick || !choiceId || buttons[option].disabled) return;
      buttons.forEach((button) => { button.disabled = true; }); // one vote per pair
      buttons[option].classList.add("picked");
      buttons[option].setAttribute("aria-pressed", "true");
      choices.dataset.voted = String(option);
      mine = { choiceId, option };
      onPick(choiceId, option);
    }

    buttons.forEach((button, i) => button.addEventListener("click", () => pick(i)));
    if (countdown) setInterval(tick, 250);

    return {
      pick,
      hasChoices: () => Boolean(choices),
      hasChat: () => Boolean(chat),
      addLine,
      // True when the message was a story or dialogue message.
      handle(msg) {
        if (msg.type === "choices") {
          showChoices(msg);
          return true;
        }
        if (msg.type === "say") {
          // The talk so far, sent when this socket (re)joined: shown only on an empty chat (a
          // reload, a newcomer), not again after a reconnect that kept the page.
          if (typeof msg.history === "number") {
            if (msg.history === 0) replaying = chat !== null && chat.children.length === 0;
            if (!replaying) return true;
          }
          addSay(msg);
          return true;
        }
        return false;
      },
    };
  }

  window.ParallaxNarrative = { attach };
})();
