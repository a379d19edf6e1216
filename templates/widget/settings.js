  /*
   * prefixdesk chat widget.
   *
   * Embed with one tag:
   *   <script src="https://desk.example.com/static/widget.js" data-bot="shop-en"
   *           data-server="https://desk.example.com" defer></script>
   *
   * data-bot     the bot's slug (required)
   * data-server  the prefixdesk server's address; empty or absent means this page's origin
   * data-name    the name shown in the panel's header (optional)
   * data-lang    the language of the widget's own labels, a BCP 47 tag: en, zh, es, fr, de, pt or
   *              it, with any region ("es-MX"); others get English (optional; defaults to the page's lang)
   * data-color   the accent colour (optional)
   *
   * Who the customer is (optional; shown to the shop's agents, never given to the bot):
   * data-user-id, data-user-email, data-user-name, and data-user-signature, the hex
   * HMAC-SHA256 of `user_id + "\n" + email + "\n" + name` (a missing field is empty) that the
   * shop's server computes with its identity secret. Unsigned, agents see it as unverified.
   *
   * A page on another origin than the server's needs that origin (scheme://host:port, exactly)
   * allowed: PREFIXDESK_WIDGET_ORIGINS, or POST /api/v1/admin/widget-origins (no restart). If it
   * is not, the widget says so and writes the setting to add to the console.
   *
   * Everything renders inside a shadow root, so the page's CSS cannot reach it. Text from the
   * server or the customer only ever goes into the DOM through textContent / text nodes.
   *
   * settings.js: the settings read from the script tag. The widget's source is in parts under
   * templates/widget/, plain script fragments sharing one function scope; the server joins them,
   * in the order backend/api/widget_script.py lists, into this one file.
   */

  const script = document.currentScript;
  if (!script || !script.dataset.bot) {
    console.warn("prefixdesk widget: add data-bot=\"<slug>\" to the <script> tag");
    return;
  }

  const bot = script.dataset.bot;
  const server = (script.dataset.server || "").replace(/\/+$/, "");
  const serverOrigin = new URL(server || location.origin, location.href).origin;
  const api = `${server}/api/v1/widget/conversations`;
  const lang = (script.dataset.lang || document.documentElement.lang || "en").toLowerCase();
  const accent = /^#[0-9a-f]{3,8}$/i.test(script.dataset.color || "") ? script.dataset.color : "#1d5c3a";
  const identity = readIdentity(script.dataset);
  // A conversation belongs to the customer signed in on the shop: another one starts their own.
  const storageKey = `prefixdesk:${serverOrigin}:${bot}${identity?.user_id ? `:${identity.user_id}` : ""}`;

  function readIdentity(data) {
    const fields = { user_id: data.userId, email: data.userEmail, name: data.userName, signature: data.userSignature };
    const given = Object.entries(fields).filter(([, value]) => value);
    return given.length ? Object.fromEntries(given) : null;
  }
