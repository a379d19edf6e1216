  // state.js: the conversation's state, and the saved conversation in localStorage.

  const state = {
    conversation: null, // {conversation_id, customer_token}
    starting: null, // the promise of the conversation being started or restored
    status: "bot",
    connection: "connecting", // see setConnection
    config: null, // the promise of the server's widget config: limits, whether this origin may embed
    limit: null, // the longest message the server takes, in characters
    assigneeId: null,
    busy: false,
    unread: 0,
    toldWaiting: false, // the "your message is with our team" notice is showing for this wait
    shownMessageIds: new Set(),
    listener: null, // AbortController of the live events stream
  };

  const storage = {
    load() {
      try {
        const saved = JSON.parse(localStorage.getItem(storageKey) || "null");
        return saved && saved.conversation_id && saved.customer_token ? saved : null;
      } catch {
        return null; // storage blocked or corrupt: start afresh
      }
    },
    save(conversation) {
      try {
        localStorage.setItem(storageKey, JSON.stringify(conversation));
      } catch {
        /* private mode: the conversation just won't survive a reload */
      }
    },
    clear() {
      try {
        localStorage.removeItem(storageKey);
      } catch {
        /* nothing to clear */
      }
    },
  };
