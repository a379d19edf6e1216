  // main.js: opening and closing the panel, the keyboard, and mounting the widget on the page.

  function openPanel() {
    panel.hidden = false;
    panel.setAttribute("aria-modal", String(phoneWidth.matches));
    root.classList.add("is-open");
    launcher.setAttribute("aria-expanded", "true");
    setUnread(0);
    log.scrollTop = log.scrollHeight;
    input.focus();
    ensureConversation().catch(() => {});
  }

  function closePanel() {
    panel.hidden = true;
    root.classList.remove("is-open");
    launcher.setAttribute("aria-expanded", "false");
    launcher.focus();
  }

  function autosize() {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight + 2, 140)}px`;
  }

  launcher.addEventListener("click", () => (panel.hidden ? openPanel() : closePanel()));
  closeButton.addEventListener("click", closePanel);
  const phoneWidth = window.matchMedia("(max-width: 480px)");
  root.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !panel.hidden) {
      event.preventDefault();
      closePanel();
    } else if (event.key === "Tab" && !panel.hidden && phoneWidth.matches) {
      keepFocusInPanel(event);
    }
  });

  // Full screen on a phone, the panel is all there is: Tab cycles inside it.
  function keepFocusInPanel(event) {
    const focusable = [...panel.querySelectorAll("button, textarea, a[href], [tabindex='0']")].filter(
      (node) => !node.disabled && node.getClientRects().length > 0,
    );
    if (!focusable.length) return;
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    const current = shadow.activeElement;
    if (event.shiftKey && current === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && current === last) {
      event.preventDefault();
      first.focus();
    }
  }
  input.addEventListener("keydown", (event) => {
    // Enter sends, Shift+Enter is a new line; never while an IME is composing (Chinese input).
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
      event.preventDefault();
      send();
    }
  });
  input.addEventListener("input", () => {
    autosize();
    updateCounter();
  });
  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });

  function mount() {
    document.body.append(host);
    // A returning customer: reconnect at once, so an agent's reply shows on the launcher.
    if (storage.load()) ensureConversation().catch(() => {});
  }

  if (document.body) mount();
  else document.addEventListener("DOMContentLoaded", mount, { once: true });
