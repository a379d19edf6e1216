  // conversation.js: starting a conversation, or restoring the saved one with its history.

  function ensureConversation() {
    if (!state.starting) {
      state.starting = (async () => {
        await loadConfig();
        const saved = storage.load();
        await (saved ? restore(saved) : startNew());
        setConnection("online");
        clearErrors();
      })().catch((error) => {
        state.starting = null; // the next attempt starts over
        showStartError(error);
        throw error;
      });
    }
    return state.starting;
  }

  async function startNew() {
    const typing = showTyping();
    try {
      const started = await requestJson(api, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(identity ? { bot, identity } : { bot }),
      });
      state.conversation = { conversation_id: started.conversation_id, customer_token: started.customer_token };
      storage.save({ ...state.conversation, greeting: started.greeting });
      addMessage("assistant", started.greeting);
      applyStatus("bot", null, { quiet: true });
      listen();
    } finally {
      typing.remove();
    }
  }

  async function restore(saved) {
    state.conversation = saved;
    let history;
    try {
      history = await requestJson(conversationUrl("/messages"), { headers: authHeaders() });
    } catch (error) {
      if (error instanceof HttpError && [401, 403, 404, 410].includes(error.status)) {
        // Deleted, or the token no longer opens it: a fresh conversation instead.
        storage.clear();
        state.conversation = null;
        if (error.status === 410) addNotice(T.deleted); // erased on request: say so
        return startNew();
      }
      state.conversation = null;
      throw error;
    }
    renderHistory(history);
    listen();
  }

  // A request got no answer: the server is out of reach, or it refuses this page's origin now.
  async function diagnose() {
    state.config = null;
    try {
      await loadConfig();
      setConnection("online"); // it answers again: that request was lost on the way
    } catch (error) {
      if (error instanceof NotAllowedError) {
        setConnection("not-allowed");
        return T.notAllowed;
      }
      setConnection("offline");
    }
    return T.offline;
  }

  // One message for why the chat cannot start, replacing any before it; the header agrees.
  function showStartError(error) {
    if (error instanceof NotAllowedError) setConnection("not-allowed");
    else setConnection(error instanceof HttpError ? "unavailable" : "offline");
    const text = error instanceof NotAllowedError ? T.notAllowed : `${T.startFailed} ${explain(error)}`;
    addError(text, {
      label: T.retry,
      run: (event) => {
        event.currentTarget.closest(".error").remove();
        ensureConversation().catch(() => {});
      },
    });
  }

  function renderHistory(history) {
    log.textContent = "";
    state.shownMessageIds.clear();
    addMessage("assistant", history.greeting);
    let stillWriting = false;
    for (const message of history.messages) {
      if (message.role === "assistant" && message.status === "generating") {
        stillWriting = true;
      } else if (message.role === "assistant" && message.status === "failed") {
        append(el("p", { className: "failed", text: T.replyFailed }));
      } else if (message.role === "user" || message.status === "complete" || tidy(message.text)) {
        const bubble = addMessage(message.role, message.text, { id: message.id, author: message.author_name });
        if (message.role === "assistant") addSources(bubble, message.sources);
        if (isAnswer(message)) addFeedback(bubble, message.id, message.feedback);
      }
    }
    applyStatus(history.status, undefined, { quiet: true }); // the header says who answers now
    log.scrollTop = log.scrollHeight;
    if (stillWriting) awaitReplyInProgress();
  }

  // Reloaded while a reply was being written: it is stored when done, so look again shortly.
  async function awaitReplyInProgress() {
    setBusy(true);
    const typing = showTyping();
    try {
      for (let attempt = 0; attempt < 40; attempt++) {
        await sleep(1500);
        const history = await requestJson(conversationUrl("/messages"), { headers: authHeaders() });
        if (!history.messages.some((m) => m.status === "generating")) {
          renderHistory(history);
          return;
        }
      }
    } catch {
      /* the customer can still reload */
    } finally {
      typing.remove();
      setBusy(false);
    }
  }
