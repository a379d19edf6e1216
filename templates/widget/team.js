  // team.js: who answers once the bot steps aside, in the bot's language. The header says the
  // conversation waits for the team until an agent has it, then names them; while the team is
  // away (the bot's office hours) the customer is told when it answers and may leave an address.

  const TEAM_STRINGS = {
    en: {
      waiting: "Waiting for our team",
      withAgent: (name) => `You're chatting with ${name}`,
      away: (when) => `Our team is away right now and will answer from ${when}.`,
      askEmail: "Leave your e-mail address and they will write to you there.",
      emailLabel: "Your e-mail address",
      sendEmail: "Send address",
      emailSaved: (email) => `Thank you. Our team will write to ${email}.`,
      emailInvalid: "That is not an e-mail address. Check it and try again.",
      emailFailed: "Your address could not be saved. Try again.",
    },
    zh: {
      waiting: "正在等待人工客服",
      withAgent: (name) => `${name} 正在为您服务`,
      away: (when) => `人工客服现在不在线，将于 ${when} 起回复您。`,
      askEmail: "请留下您的电子邮箱，客服会通过邮件回复您。",
      emailLabel: "您的电子邮箱",
      sendEmail: "提交邮箱",
      emailSaved: (email) => `谢谢！客服会发送邮件至 ${email}。`,
      emailInvalid: "这不是有效的电子邮箱，请检查后重试。",
      emailFailed: "邮箱未能保存，请重试。",
    },
    es: {
      waiting: "Esperando a nuestro equipo",
      withAgent: (name) => `Está hablando con ${name}`,
      away: (when) => `Nuestro equipo no está disponible en este momento y le responderá a partir del ${when}.`,
      askEmail: "Déjenos su dirección de correo electrónico y le escribiremos allí.",
      emailLabel: "Su dirección de correo electrónico",
      sendEmail: "Enviar dirección",
      emailSaved: (email) => `Gracias. Nuestro equipo le escribirá a ${email}.`,
      emailInvalid: "Esa no es una dirección de correo electrónico válida. Revísela e inténtelo de nuevo.",
      emailFailed: "No se ha podido guardar su dirección. Inténtelo de nuevo.",
    },
    fr: {
      waiting: "En attente de notre équipe",
      withAgent: (name) => `Vous échangez avec ${name}`,
      away: (when) => `Notre équipe est absente pour le moment et vous répondra à partir de ${when}.`,
      askEmail: "Laissez-nous votre adresse e-mail et notre équipe vous écrira à cette adresse.",
      emailLabel: "Votre adresse e-mail",
      sendEmail: "Envoyer l'adresse",
      emailSaved: (email) => `Merci. Notre équipe vous écrira à ${email}.`,
      emailInvalid: "Cette adresse e-mail n'est pas valide. Vérifiez-la et réessayez.",
      emailFailed: "Votre adresse n'a pas pu être enregistrée. Veuillez réessayer.",
    },
    de: {
      waiting: "Warten auf unser Team",
      withAgent: (name) => `Sie chatten mit ${name}`,
      away: (when) => `Unser Team ist gerade nicht erreichbar und antwortet ab ${when}.`,
      askEmail: "Hinterlassen Sie Ihre E-Mail-Adresse, dann schreibt Ihnen unser Team dorthin.",
      emailLabel: "Ihre E-Mail-Adresse",
      sendEmail: "Adresse senden",
      emailSaved: (email) => `Vielen Dank. Unser Team schreibt Ihnen an ${email}.`,
      emailInvalid: "Das ist keine gültige E-Mail-Adresse. Bitte prüfen Sie sie und versuchen Sie es erneut.",
      emailFailed: "Ihre Adresse konnte nicht gespeichert werden. Bitte versuchen Sie es erneut.",
    },
    pt: {
      waiting: "Aguardando nossa equipe",
      withAgent: (name) => `Você está conversando com ${name}`,
      away: (when) => `Nossa equipe não está disponível no momento e vai responder a partir de ${when}.`,
      askEmail: "Deixe seu endereço de e-mail, e nossa equipe vai escrever para você por lá.",
      emailLabel: "Seu endereço de e-mail",
      sendEmail: "Enviar endereço",
      emailSaved: (email) => `Obrigado. Nossa equipe vai escrever para ${email}.`,
      emailInvalid: "Este não é um endereço de e-mail válido. Verifique e tente novamente.",
      emailFailed: "Não foi possível salvar seu endereço. Tente novamente.",
    },
    it: {
      waiting: "In attesa del nostro team",
      withAgent: (name) => `Sta parlando con ${name}`,
      away: (when) => `Al momento il nostro team non è disponibile e le risponderà a partire da ${when}.`,
      askEmail: "Ci lasci il suo indirizzo e-mail: il nostro team le scriverà lì.",
      emailLabel: "Il suo indirizzo e-mail",
      sendEmail: "Invia indirizzo",
      emailSaved: (email) => `Grazie. Il nostro team le scriverà all'indirizzo ${email}.`,
      emailInvalid: "Questo non è un indirizzo e-mail valido. Lo controlli e riprovi.",
      emailFailed: "Non è stato possibile salvare il suo indirizzo. Riprovi.",
    },
  };

  const team = {
    info: null, // the server's last word on the team (GET .../team): language, assignee, hours
    away: null, // the "team is away" box in the log, once shown
  };

  shadow.append(
    el("style", {
      text: `
    .away { align-self: stretch; display: grid; gap: 6px; padding: 10px 12px; border-radius: 10px;
      background: #fff8e6; border: 1px solid #ecd9a4; color: #4a3b12; font-size: 14px; }
    .away p { margin: 0; }
    .away .row { display: flex; gap: 6px; }
    .away input { flex: 1; min-width: 0; padding: 6px 8px; border: 1px solid #c9c2ad; border-radius: 8px; font: inherit; }
    .away button { padding: 6px 12px; border-radius: 999px; border: 1px solid var(--accent);
      background: var(--accent); color: #fff; font: inherit; }
    .away .problem { color: #8a1c12; font-size: 13px; }
    .away .problem[hidden] { display: none; }`,
    }),
  );

  // In the bot's language once the server has said it, the page's until then.
  function teamStrings() {
    return TEAM_STRINGS[languageIn(TEAM_STRINGS, team.info?.language || lang)];
  }

  // The header says what is true now: not "replies instantly" while the chat cannot be used.
  function updateSubtitle() {
    const problems = {
      connecting: T.connectingSubtitle,
      offline: T.offlineSubtitle,
      unavailable: T.unavailableSubtitle,
      "not-allowed": T.notAllowedSubtitle,
    };
    const problem = problems[state.connection];
    let text = state.status === "resolved" ? T.resolvedSubtitle : T.assistantSubtitle;
    if (state.status === "open") {
      const name = team.info?.status === "open" ? team.info.assignee_name : null;
      text = name ? teamStrings().withAgent(name) : teamStrings().waiting;
    }
    subtitle.dataset.status = problem ? state.connection : state.status;
    subtitle.textContent = problem || text;
  }

  // A status from the server; notices only for changes the customer hasn't seen yet, and none
  // when the bot itself said it is handing over (`announced`): its message says so once.
  function applyStatus(status, assigneeId, { quiet = false, announced = false } = {}) {
    const before = { status: state.status, assigneeId: state.assigneeId };
    state.status = status;
    if (assigneeId !== undefined) state.assigneeId = assigneeId;
    if (status !== before.status) state.toldWaiting = false;
    if (status !== "open") state.assigneeId = null;
    updateSubtitle();
    if (status === "open") refreshTeam();
    if (status === "resolved") offerRating();
    if (quiet) return;
    if (status === "open") {
      if (before.status !== "open" && !announced) addNotice(state.assigneeId != null ? T.withTeam : T.connecting);
      else if (before.status === "open" && before.assigneeId == null && state.assigneeId != null) addNotice(T.withTeam);
    } else if (status === "bot" && before.status === "open") {
      addNotice(T.botBack);
    } else if (status === "resolved" && before.status !== "resolved") {
      addNotice(T.resolved);
    }
  }

  // Who has the conversation and whether the team is there; then the header, and the question
  // for an address if nobody is (once per log: a reload shows it again).
  async function refreshTeam() {
    const conversation = state.conversation;
    if (!conversation) return;
    let info;
    try {
      info = await requestJson(conversationUrl("/team"), { headers: authHeaders() });
    } catch {
      return; // the header keeps saying the team will answer
    }
    if (state.conversation !== conversation) return;
    team.info = info;
    updateSubtitle();
    if (state.status === "open" && !info.open_now && !(team.away && team.away.isConnected)) showAway(info);
  }

  function showAway(info) {
    const S = teamStrings();
    team.away = append(el("div", { className: "away", "data-away": "" }, [el("p", { text: S.away(info.next_opening_text) })]), {
      scroll: true,
    });
    if (info.contact_email) team.away.append(el("p", { text: S.emailSaved(info.contact_email) }));
    else team.away.append(emailForm(S));
  }

  // Checked by the server (a clear 422), not the browser: its message is the customer's language.
  function emailForm(S) {
    const id = `email-${uid}`;
    const field = el("input", { type: "email", id, name: "email", autocomplete: "email", inputmode: "email", maxlength: "320" });
    const problem = el("p", { className: "problem", role: "alert", hidden: "" });
    const form = el("form", { novalidate: "" }, [
      el("p", { text: S.askEmail }),
      el("label", { className: "sr-only", for: id, text: S.emailLabel }),
      el("div", { className: "row" }, [field, el("button", { type: "submit", text: S.sendEmail })]),
      problem,
    ]);
    field.setAttribute("aria-label", S.emailLabel);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      problem.hidden = true;
      try {
        team.info = await requestJson(conversationUrl("/contact-email"), {
          method: "PUT",
          headers: { ...authHeaders(), "Content-Type": "application/json" },
          body: JSON.stringify({ email: field.value.trim() }),
        });
        form.replaceWith(el("p", { role: "status", text: S.emailSaved(team.info.contact_email) }));
      } catch (error) {
        problem.textContent = error instanceof HttpError && error.status === 422 ? S.emailInvalid : S.emailFailed;
        problem.hidden = false;
        field.focus();
      }
    });
    return form;
  }
