// Story picks and character dialogue (protocol v1 "choices" and "say"), shared by the play and
// watch pages: `ParallaxNarrative.attach({onPick})` returns a handler for their JSON messages.
(() => {
  "use strict";

  function attach({ onPick } = {}) {
    const lines = document.getElementById("story-lines");
    const choices = document.getElementById("story-choices");
    const chat = document.getElementById("chat-log");
    const buttons = choices ? [...choices.querySelectorAll(".story-option")] : [];

    function showChoices(msg) {
      if (!choices) return;
      lines.replaceChildren(...(msg.story || []).map((text) => {
        const li = document.createElement("li");
        li.textContent = text;
        return li;
      }));
      lines.scrollTop = lines.scrollHeight;
      choices.dataset.choice = msg.choice_id || "";
      buttons.forEach((button, i) => {
        button.querySelector(".story-label").textContent = (msg.options || [])[i] || "…";
        button.disabled = !onPick || !msg.choice_id;
      });
    }

    function addLine(speaker, text, className) {
      if (!chat) return;
      const li = document.createElement("li");
      li.className = className || (speaker === "you" ? "chat-you" : "chat-them");
      const who = document.createElement("b");
      who.textContent = `${speaker}: `;
      li.append(who, document.createTextNode(text));
      chat.append(li);
      chat.scrollTop = chat.scrollHeight;
    }

    function pick(option) {
      const choiceId = choices && choices.dataset.choice;
      if (!onPick || !choiceId || buttons[option].disabled) return;
      buttons.forEach((button) => { button.disabled = true; }); // one pick per pair
      buttons[option].classList.add("picked");
      choices.dataset.choice = "";
      onPick(choiceId, option);
    }

    buttons.forEach((button, i) => button.addEventListener("click", () => pick(i)));

    return {
      pick,
      hasChoices: () => Boolean(choices),
      hasChat: () => Boolean(chat),
      addLine,
      // True when the message was a story or dialogue message.
      handle(msg) {
        if (msg.type === "choices") {
          buttons.forEach((button) => button.classList.remove("picked"));
          showChoices(msg);
          return true;
        }
        if (msg.type === "say") {
          addLine(msg.speaker, msg.text);
          return true;
        }
        return false;
      },
    };
  }

  window.ParallaxNarrative = { attach };
})();
