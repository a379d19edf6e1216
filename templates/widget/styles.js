  // styles.js: the widget's CSS, for the <style> in its shadow root.

  const CSS = `
    :host { all: initial; }
    *, *::before, *::after { box-sizing: border-box; }
    .root {
      --accent: ${accent};
      font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "PingFang SC",
        "Microsoft YaHei", sans-serif;
      color: #1f2328;
    }
    button { font: inherit; cursor: pointer; }
    .sr-only {
      position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
      clip: rect(0 0 0 0); white-space: nowrap; border: 0;
    }
    .launcher {
      position: fixed; right: 20px; bottom: 20px; z-index: 2147483000;
      width: 60px; height: 60px; border-radius: 50%; border: 0;
      display: grid; place-items: center;
      background: var(--accent); color: #fff;
      box-shadow: 0 6px 20px rgb(0 0 0 / 0.25);
      transition: transform 0.15s ease;
    }
    .launcher:hover { transform: scale(1.06); }
    .launcher:focus-visible { outline: 3px solid #fff; box-shadow: 0 0 0 6px var(--accent), 0 6px 20px rgb(0 0 0 / 0.25); }
    .launcher svg { width: 28px; height: 28px; }
    .launcher svg + svg, .root.is-open .launcher svg:first-child { display: none; }
    .root.is-open .launcher svg + svg { display: block; }
    .badge {
      position: absolute; top: -2px; right: -2px; min-width: 22px; height: 22px; padding: 0 6px;
      border-radius: 11px; background: #d93025; color: #fff; font-size: 12px; font-weight: 700;
      line-height: 22px; text-align: center; border: 2px solid #fff;
    }
    .badge[hidden] { display: none; }
    .panel {
      position: fixed; right: 20px; bottom: 92px; z-index: 2147483000;
      width: 380px; height: min(620px, calc(100vh - 112px));
      display: flex; flex-direction: column; overflow: hidden;
      background: #fff; border-radius: 16px;
      box-shadow: 0 12px 40px rgb(0 0 0 / 0.22), 0 0 0 1px rgb(0 0 0 / 0.06);
    }
    .panel[hidden] { display: none; }
    .header {
      display: flex; align-items: center; gap: 12px; padding: 14px 12px 14px 16px;
      background: var(--accent); color: #fff;
    }
    .avatar {
      flex: none; width: 36px; height: 36px; border-radius: 50%;
      display: grid; place-items: center; background: rgb(255 255 255 / 0.18);
    }
    .avatar svg { width: 20px; height: 20px; }
    .titles { flex: 1; min-width: 0; }
    .title { margin: 0; font-size: 16px; font-weight: 650; line-height: 1.25; }
    .subtitle { margin: 0; font-size: 12.5px; opacity: 0.88; }
    .subtitle::before {
      content: ""; display: inline-block; width: 8px; height: 8px; margin-right: 6px;
      border-radius: 50%; background: #7be495; vertical-align: 0;
    }
    .subtitle[data-status="open"]::before { background: #ffd166; }
    .subtitle[data-status="resolved"]::before { background: #c9d1c6; }
    .subtitle[data-status="connecting"]::before { background: #c9d1c6; }
    .subtitle[data-status="offline"]::before, .subtitle[data-status="unavailable"]::before,
    .subtitle[data-status="not-allowed"]::before { background: #ff8a80; }
    .icon-button {
      flex: none; width: 36px; height: 36px; border-radius: 50%; border: 0;
      display: grid; place-items: center; background: transparent; color: inherit;
    }
    .icon-button:hover { background: rgb(255 255 255 / 0.16); }
    .icon-button:focus-visible { outline: 2px solid #fff; outline-offset: 1px; }
    .icon-button svg { width: 20px; height: 20px; }
    .log {
      flex: 1; overflow-y: auto; overscroll-behavior: contain;
      display: flex; flex-direction: column; gap: 8px; padding: 16px;
      background: #f5f6f3;
    }
    .log:focus-visible { outline: 2px solid var(--accent); outline-offset: -2px; }
    .msg {
      max-width: 85%; padding: 9px 13px; border-radius: 16px;
      white-space: pre-wrap; overflow-wrap: anywhere;
    }
    .msg.user { align-self: flex-end; background: var(--accent); color: #fff; border-bottom-right-radius: 4px; }
    .msg.bot { align-self: flex-start; background: #fff; border: 1px solid #e2e5df; border-bottom-left-radius: 4px; }
    .msg.agent { align-self: flex-start; background: #fff6e3; border: 1px solid #f0d9a5; border-bottom-left-radius: 4px; }
    .msg a { color: inherit; text-decoration: underline; }
    .msg .empty { color: #6b716a; font-style: italic; }
    /* A reply still streaming looks like a finished one, with a caret where the next words come. */
    .msg .streaming::after {
      content: ""; display: inline-block; width: 2px; height: 1.05em; margin-left: 2px;
      vertical-align: text-bottom; background: currentColor; opacity: 0.55;
      animation: prefixdesk-caret 1s steps(2, start) infinite;
    }
    @keyframes prefixdesk-caret { to { visibility: hidden; } }
    .feedback { display: flex; align-items: center; gap: 6px; margin-top: 6px; white-space: normal; }
    .feedback button {
      flex: none; width: 30px; height: 30px; padding: 0; border-radius: 50%;
      display: grid; place-items: center;
      border: 1px solid #c8cec5; background: #fff; color: #4f564e;
    }
    .feedback button:hover { background: #eef1ec; }
    .feedback button[aria-pressed="true"] { background: var(--accent); border-color: var(--accent); color: #fff; }
    .feedback button:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
    .feedback svg { width: 16px; height: 16px; }
    .feedback-note { font-size: 12.5px; color: #4f564e; }
    /* The articles a reply cites: a quiet list under its text. */
    .sources {
      margin-top: 8px; padding-top: 6px; border-top: 1px solid #e8ebe6;
      white-space: normal; font-size: 12.5px; line-height: 1.4; color: #4f564e;
    }
    .sources-label { display: block; margin-bottom: 2px; font-weight: 650; }
    .sources ul { margin: 0; padding: 0 0 0 16px; }
    .sources li { margin: 1px 0; }
    .sources li::marker { color: #8b938a; }
    .sources a:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; border-radius: 2px; }
    .passage { margin: 2px 0 4px; }
    .passage summary { cursor: pointer; color: var(--accent); width: fit-content; }
    .passage summary:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; border-radius: 2px; }
    .passage blockquote { margin: 4px 0 0; padding: 4px 8px; border-left: 3px solid #d5dbd2; color: #2f352e; }
    .sender { display: block; margin-bottom: 2px; font-size: 12px; font-weight: 650; color: #7a5200; }
    .notice {
      align-self: center; max-width: 92%; margin: 4px 0; padding: 5px 12px;
      border-radius: 999px; background: #e6ebe3; color: #3b4a3f; font-size: 13px; text-align: center;
    }
    .error {
      align-self: stretch; padding: 8px 12px; border-radius: 10px;
      background: #fdecea; border: 1px solid #f2c4bf; color: #8a1c12; font-size: 14px;
    }
    .error button, .composer-error button {
      display: inline-block; margin-left: 6px; padding: 2px 10px; border-radius: 999px;
      border: 1px solid currentColor; background: #fff; color: inherit; font-size: 13px;
    }
    .failed { align-self: flex-start; color: #6b716a; font-size: 13px; font-style: italic; }
    .typing { display: inline-flex; gap: 4px; align-items: center; padding: 13px 14px; }
    .typing i {
      width: 7px; height: 7px; border-radius: 50%; background: #8b938a;
      animation: prefixdesk-bounce 1.2s infinite ease-in-out;
    }
    .typing i:nth-child(2) { animation-delay: 0.15s; }
    .typing i:nth-child(3) { animation-delay: 0.3s; }
    @keyframes prefixdesk-bounce {
      0%, 60%, 100% { transform: translateY(0); opacity: 0.5; }
      30% { transform: translateY(-4px); opacity: 1; }
    }
    .composer-error {
      margin: 0; padding: 8px 16px; background: #fdecea; color: #8a1c12; font-size: 13.5px;
      border-top: 1px solid #f2c4bf;
    }
    .composer-error[hidden] { display: none; }
    .counter { margin: 0; padding: 0 18px 8px; background: #fff; color: #5b635c; font-size: 12px; text-align: right; }
    .counter[hidden] { display: none; }
    .counter[data-level="near"] { color: #8a5a00; font-weight: 600; }
    .counter[data-level="over"] { color: #b3261e; font-weight: 650; }
    .composer {
      display: flex; align-items: flex-end; gap: 8px; padding: 12px;
      border-top: 1px solid #e2e5df; background: #fff;
    }
    textarea {
      flex: 1; min-height: 44px; max-height: 140px; resize: none; margin: 0;
      padding: 10px 14px; border: 1px solid #c8cec5; border-radius: 22px;
      font: inherit; color: inherit; background: #fff;
    }
    textarea:focus-visible { outline: none; border-color: var(--accent); box-shadow: 0 0 0 2px var(--accent); }
    .send {
      flex: none; width: 44px; height: 44px; border-radius: 50%; border: 0;
      display: grid; place-items: center; background: var(--accent); color: #fff;
    }
    .send:focus-visible { outline: 3px solid #fff; box-shadow: 0 0 0 5px var(--accent); }
    .send[aria-disabled="true"] { opacity: 0.45; cursor: not-allowed; }
    .send svg { width: 20px; height: 20px; }
    @media (max-width: 480px) {
      .panel { inset: 0; width: 100%; height: 100%; border-radius: 0; }
      .root.is-open .launcher { display: none; }
      textarea { font-size: 16px; } /* below 16px, iOS zooms into the field */
    }
    @media (prefers-reduced-motion: reduce) {
      .launcher { transition: none; }
      .typing i { animation: none; opacity: 0.8; }
      .msg .streaming::after { animation: none; }
    }
  `;
