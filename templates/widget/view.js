  // view.js: the widget's DOM: the launcher and the panel, in a shadow root.

  const host = el("div", { id: `prefixdesk-widget-${bot}`, "data-prefixdesk-bot": bot });
  const shadow = host.attachShadow({ mode: "open" });
  const uid = Math.random().toString(36).slice(2, 8);

  const badge = el("span", { className: "badge", "aria-hidden": "true", hidden: "" });
  const launcher = el(
    "button",
    { type: "button", className: "launcher", "aria-label": T.openChat, "aria-expanded": "false", "aria-controls": `panel-${uid}` },
    [icon(ICONS.chat), icon(ICONS.chevronDown), badge],
  );

  const subtitle = el("p", { className: "subtitle", id: `subtitle-${uid}`, text: T.connectingSubtitle, "data-status": "connecting" });
  const closeButton = el("button", { type: "button", className: "icon-button", "aria-label": T.closeChat }, [icon(ICONS.close)]);
  const header = el("div", { className: "header" }, [
    el("div", { className: "avatar", "aria-hidden": "true" }, [icon(ICONS.chat)]),
    el("div", { className: "titles" }, [el("h2", { className: "title", id: `title-${uid}`, text: title }), subtitle]),
    closeButton,
  ]);
  const log = el("div", {
    className: "log",
    role: "log",
    "aria-live": "polite",
    "aria-label": T.messages,
    tabindex: "0",
  });
  const composerError = el("p", { className: "composer-error", role: "alert", hidden: "" });
  const input = el("textarea", {
    id: `input-${uid}`,
    rows: "1",
    placeholder: T.placeholder,
    autocomplete: "off",
    enterkeyhint: "send",
  });
  const counter = el("p", { className: "counter", id: `counter-${uid}`, hidden: "" });
  input.setAttribute("aria-describedby", counter.id);
  const sendButton = el("button", { type: "submit", className: "send", "aria-label": T.send }, [icon(ICONS.send)]);
  const composer = el("form", { className: "composer" }, [
    el("label", { className: "sr-only", for: `input-${uid}`, text: T.inputLabel }),
    input,
    sendButton,
  ]);
  const panel = el(
    "div",
    {
      className: "panel",
      id: `panel-${uid}`,
      role: "dialog",
      "aria-label": title,
      "aria-describedby": `subtitle-${uid}`,
      hidden: "",
    },
    [header, log, composerError, composer, counter],
  );
  const root = el("div", { className: "root" }, [panel, launcher]);
  shadow.append(el("style", { text: CSS }), root);
