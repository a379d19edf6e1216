  // live.js: the live event stream: agents' replies and status changes.

  function listen() {
    if (state.listener) state.listener.abort();
    const controller = new AbortController();
    state.listener = controller;
    const conversation = state.conversation;
    (async () => {
      let delay = 1000;
      let connections = 0;
      while (!controller.signal.aborted) {
        const openedAt = Date.now();
        try {
          const response = await fetch(conversationUrl("/events"), {
            headers: { ...authHeaders(), Accept: "text/event-stream" },
            cache: "no-store",
            signal: controller.signal,
          });
          if ([401, 403, 404, 410].includes(response.status)) return; // the conversation is gone
          if (!response.ok) throw await httpError(response);
          connections += 1;
          host.dataset.live = "connected";
          if (state.connection === "offline") setConnection("online");
          // Anything said while the stream was down is in the history.
          if (connections > 1) catchUp(conversation).catch(() => {});
          await readEvents(response, handleLiveEvent);
        } catch (error) {
          if (controller.signal.aborted) return;
          if (!(error instanceof HttpError)) setConnection("offline"); // the server did not answer
        }
        host.dataset.live = "reconnecting";
        delay = Date.now() - openedAt > 10000 ? 1000 : Math.min(delay * 2, 30000);
        await sleep(delay * (0.75 + Math.random() * 0.5));
      }
    })();
  }

  function handleLiveEvent(type, event) {
    const data = (event && event.data) || {};
    if (type === "message.created" && isReply(data)) {
      // The bot's replies to the customer's own turns stream with them; this shows the others
      // (an answer when the bot takes back over), each once.
      if (state.shownMessageIds.has(data.message_id)) return;
      const bubble = addMessage(data.role, data.text || "", { id: data.message_id, author: data.author_name });
      if (data.role === "assistant") {
        addSources(bubble, data.sources);
        if (isAnswer(data)) addFeedback(bubble, data.message_id);
      }
      state.toldWaiting = false;
      if (panel.hidden) setUnread(state.unread + 1);
    } else if (type === "conversation.status_changed" && typeof data.status === "string") {
      // A handoff the customer asked for: the bot's own message says so.
      applyStatus(data.status, data.assignee_id ?? null, { announced: data.reason === "customer_request" });
    }
  }

  function isReply(message) {
    return message.role === "agent" || (message.role === "assistant" && message.status === "complete");
  }

  async function catchUp(conversation) {
    if (state.busy || state.conversation !== conversation) return;
    const history = await requestJson(conversationUrl("/messages"), { headers: authHeaders() });
    for (const message of history.messages) {
      if (isReply(message) && !state.shownMessageIds.has(message.id)) {
        const bubble = addMessage(message.role, message.text, { id: message.id, author: message.author_name });
        if (message.role === "assistant") {
          addSources(bubble, message.sources);
          if (isAnswer(message)) addFeedback(bubble, message.id, message.feedback);
        }
      }
    }
    if (history.status !== state.status) applyStatus(history.status);
  }
