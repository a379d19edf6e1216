  // feedback.js: thumbs up and down under each of the bot's finished replies.

  const FEEDBACK_CHOICES = [
    { value: "up", label: T.helpful, paths: ICONS.thumbUp },
    { value: "down", label: T.notHelpful, paths: ICONS.thumbDown },
  ];

  // Whether a message is one of the bot's answers, which take thumbs: complete, not cut short by
  // an agent, and not the handover message (the bot's word that a person takes over).
  function isAnswer(message) {
    return (
      message.role === "assistant" &&
      message.status === "complete" &&
      message.finish_reason !== "handoff" &&
      message.finish_reason !== "interrupted"
    );
  }

  // Rating buttons under the reply in `bubble`, stored as message `messageId`, rated `current`.
  function addFeedback(bubble, messageId, current = null) {
    const note = el("span", { className: "feedback-note" });
    let confirmed = current; // what the server has
    let latest = 0; // clicks are saved in order; only the last one's answer is shown
    let saving = Promise.resolve();
    const show = (feedback) => {
      for (const button of buttons) {
        button.setAttribute("aria-pressed", String(button.dataset.feedback === feedback));
      }
    };
    const buttons = FEEDBACK_CHOICES.map(({ value, label, paths }) => {
      const attributes = { type: "button", "aria-label": label, title: label, "data-feedback": value };
      const button = el("button", attributes, [icon(paths)]);
      button.addEventListener("click", () => {
        // Pressing the thumb that is already pressed takes the rating back.
        const wanted = button.getAttribute("aria-pressed") === "true" ? null : value;
        const ticket = ++latest;
        show(wanted);
        note.textContent = "";
        saving = saving
          .then(() => saveFeedback(messageId, wanted))
          .then(
            (saved) => {
              confirmed = saved.feedback;
              if (ticket !== latest) return;
              show(confirmed);
              note.textContent = confirmed ? T.feedbackThanks : T.feedbackRemoved;
            },
            () => {
              if (ticket !== latest) return;
              show(confirmed);
              note.textContent = T.feedbackFailed;
            },
          );
      });
      return button;
    });
    show(confirmed);
    const follow = isNearBottom();
    bubble.append(el("div", { className: "feedback", role: "group", "aria-label": T.rateReply }, [...buttons, note]));
    if (follow) log.scrollTop = log.scrollHeight;
  }

  function saveFeedback(messageId, feedback) {
    return requestJson(conversationUrl(`/messages/${encodeURIComponent(messageId)}/feedback`), {
      method: "PUT",
      headers: { ...authHeaders(), "Content-Type": "application/json" },
      body: JSON.stringify({ feedback }),
    });
  }
