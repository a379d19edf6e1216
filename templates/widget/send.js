  // send.js: sending a message and showing the streamed reply; starting over.

  async function send() {
    const text = input.value.trim();
    if (!text || state.busy) return;
    const count = [...text].length;
    if (state.limit != null && count > state.limit) {
      showComposerError(T.tooLong(count, state.limit)); // not sent: the text stays to be shortened
      return;
    }
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
    updateCounter();
    // With a person handling the conversation, nobody types right away.
    let typing = state.status === "open" ? null : showTyping();
    let reply = null;
    let streamed = "";
    let finished = false;

    const restoreDraft = () => {
      userBubble.remove();
      if (!input.value) input.value = text;
      autosize();
      updateCounter();
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
        showComposerError(await diagnose());
        return;
      }
      if (state.connection !== "online") setConnection("online");
      if (!response.ok) {
        const error = await httpError(response);
        stopTyping();
        restoreDraft(); // not stored: the customer can send it again
        if (error.status === 413) {
          state.config = null; // the limit may have changed since the page loaded: ask again
          await loadConfig().catch(() => {});
        }
        const cannotGoOn = error.code === "context_window_full" || [401, 403, 404, 410].includes(error.status);
        const action = cannotGoOn ? { label: T.newConversation, run: startOver } : undefined;
        showComposerError(explain(error, { count }), action);
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
          if (!reply) reply = addMessage("assistant", "", { streaming: true });
          const follow = isNearBottom();
          showStreamingText(reply.body, streamed);
          if (follow) log.scrollTop = log.scrollHeight;
        } else if (type === "done") {
          finished = true;
          stopTyping();
          if (!reply) reply = addMessage("assistant", "");
          showReplyText(reply.body, typeof data.text === "string" ? data.text : streamed);
          addSources(reply, data.sources);
          if (data.message_id != null) {
            // The live stream may have shown this message already (its event can overtake this
            // stream's "accepted" on a busy connection): this bubble is the one that stays.
            for (const other of log.querySelectorAll(`[data-message-id="${Number(data.message_id)}"]`)) {
              if (other !== reply) other.remove();
            }
            reply.dataset.messageId = String(data.message_id);
            state.shownMessageIds.add(data.message_id);
            // A reply an agent cut short, or the handover message, is not the bot's answer: not rated.
            if (isAnswer({ role: "assistant", status: "complete", finish_reason: data.finish_reason })) {
              addFeedback(reply, data.message_id);
            }
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
          console.warn(`prefixdesk widget: the reply failed (${data.code}): ${data.detail}`);
          addError(T.replyFailed);
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
