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

    // The reply being generated: partial lines rewrite it in place, the final line settles it.
    let streaming = null;

    function addLine(speaker, text, className, partial = false) {
      if (!chat) return;
      let li = streaming && streaming.dataset.speaker === speaker ? streaming : null;
      if (!li) {
        li = document.createElement("li");
        chat.append(li);
      }
      li.className = className || (speaker === "you" ? "chat-you" : "chat-them");
      li.classList.toggle("chat-partial", partial);
      li.dataset.speaker = speaker;
      const who = document.createElement("b");
      who.textContent = `${speaker}: `;
      li.replaceChildren(who, document.createTextNode(text));
      streaming = partial ? li : null;
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
          addLine(msg.speaker, msg.text, undefined, msg.partial === true);
          return true;
        }
        return false;
      },
    };
  }

  window.ParallaxNarrative = { attach };
})();
