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
          if ([401, 403, 404].includes(response.status)) return; // the conversation is gone
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
    if (type === "message.created" && data.role === "agent") {
      if (state.shownMessageIds.has(data.message_id)) return;
      addMessage("agent", data.text || "", { id: data.message_id, author: data.author_name });
      state.toldWaiting = false;
      if (panel.hidden) setUnread(state.unread + 1);
    } else if (type === "conversation.status_changed" && typeof data.status === "string") {
      applyStatus(data.status, data.assignee_id ?? null);
    }
  }

  async function catchUp(conversation) {
    if (state.busy || state.conversation !== conversation) return;
    const history = await requestJson(conversationUrl("/messages"), { headers: authHeaders() });
    for (const message of history.messages) {
      if (message.role === "agent" && !state.shownMessageIds.has(message.id)) {
        addMessage("agent", message.text, { id: message.id, author: message.author_name });
      }
    }
    if (history.status !== state.status) applyStatus(history.status);
  }
