  // send.js: sending a message and showing the streamed reply; starting over.

  async function send() {
    const text = input.value.trim();
    if (!text || state.busy) return;
    clearComposerError();
    setBusy(true);
    try {
      await ensureConversation();
    } catch {
      setBusy(false);
      return;
    }
    const userBubble = addMessage("user", text, { scroll: true });
    input.value = "";
    autosize();
    // With a person handling the conversation, nobody types right away.
    let typing = state.status === "open" ? null : showTyping();
    let reply = null;
    let streamed = "";
    let finished = false;

    const restoreDraft = () => {
      userBubble.remove();
      if (!input.value) input.value = text;
      autosize();
    };
    const stopTyping = () => {
      if (typing) typing.remove();
      typing = null;
    };

    try {
      let response;
      try {
        response = await fetch(conversationUrl("/messages"), {
          method: "POST",
          headers: { ...authHeaders(), "Content-Type": "application/json", Accept: "text/event-stream" },
          body: JSON.stringify({ text }),
          cache: "no-store",
        });
      } catch {
        stopTyping();
        restoreDraft();
        showComposerError(T.offline);
        return;
      }
      if (!response.ok) {
        const error = await httpError(response);
        stopTyping();
        restoreDraft(); // not stored: the customer can send it again
        if (error.code === "context_window_full" || [401, 403, 404].includes(error.status)) {
          showComposerError(error.status === 409 ? error.message : T.gone, {
            label: T.newConversation,
            run: startOver,
          });
        } else {
          showComposerError(error.message);
        }
        return;
      }
      await readEvents(response, (type, data) => {
        if (type === "accepted" && data.user_message_id != null) {
          userBubble.dataset.messageId = String(data.user_message_id);
          state.shownMessageIds.add(data.user_message_id);
          if (data.reply_message_id != null) state.shownMessageIds.add(data.reply_message_id); // shown here
        } else if (type === "token") {
          streamed += data.text || "";
          const visible = tidy(streamed);
          if (!visible) return; // only whitespace so far: keep the typing dots
          stopTyping();
          if (!reply) reply = addMessage("assistant", "");
          const follow = isNearBottom();
          reply.body.textContent = visible;
          if (follow) log.scrollTop = log.scrollHeight;
        } else if (type === "done") {
          finished = true;
          stopTyping();
          if (!reply) reply = addMessage("assistant", "");
          showReplyText(reply.body, typeof data.text === "string" ? data.text : streamed);
          if (data.message_id != null) {
            reply.dataset.messageId = String(data.message_id);
            state.shownMessageIds.add(data.message_id);
            // A reply an agent cut short is not the bot's answer: it is not rated.
            if (data.finish_reason !== "interrupted") addFeedback(reply, data.message_id);
          }
          // The bot's handover message is the one word of the handoff: no notice besides it.
          if (typeof data.status === "string") applyStatus(data.status, undefined, { announced: data.finish_reason === "handoff" });
          if (panel.hidden) setUnread(state.unread + 1);
        } else if (type === "waiting") {
          finished = true;
          stopTyping();
          if (typeof data.status === "string") applyStatus(data.status);
          if (!state.toldWaiting) addNotice(T.waiting);
          state.toldWaiting = true;
        } else if (type === "error") {
          finished = true;
          stopTyping();
          if (reply) reply.remove(); // not stored: the history will not have it either
          addError(data.detail || T.replyFailed);
        }
      });
      if (!finished) {
        stopTyping();
        addError(T.streamCut);
      }
    } catch {
      stopTyping();
      if (!finished) addError(T.streamCut);
    } finally {
      setBusy(false);
    }
  }

  // The conversation cannot go on (context window full, or gone): begin a fresh one.
  async function startOver() {
    if (state.listener) state.listener.abort();
    storage.clear();
    state.conversation = null;
    state.starting = null;
    state.status = "bot";
    state.assigneeId = null;
    clearComposerError();
    log.textContent = "";
    updateSubtitle();
    await ensureConversation().catch(() => {});
    input.focus();
  }
