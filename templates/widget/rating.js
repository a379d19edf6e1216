  // rating.js: once the conversation is resolved, the customer is asked to rate it, 1 to 5 stars,
  // with an optional comment, in the bot's language. A conversation is rated once.

  const RATING_STRINGS = {
    en: {
      question: "How did we do? Rate this conversation",
      star: (n) => `${n} of 5`,
      comment: "Anything to add? (optional)",
      submit: "Send rating",
      choose: "Choose 1 to 5 stars first.",
      thanks: (n) => `Thanks for rating this conversation ${n} of 5.`,
      failed: "Your rating could not be sent. Try again.",
      closed: "This conversation can no longer be rated.",
      invalid: "Your comment could not be sent. Remove any unusual characters and try again.",
    },
    zh: {
      question: "您对本次服务满意吗？请为本次会话评分",
      star: (n) => `${n} 星（满分 5 星）`,
      comment: "还有什么想告诉我们的吗？（选填）",
      submit: "提交评价",
      choose: "请先选择 1 到 5 星。",
      thanks: (n) => `感谢您的评价：${n} 星（满分 5 星）。`,
      failed: "评价未能提交，请重试。",
      closed: "本次会话已无法评价。",
      invalid: "评论未能提交，请删除特殊字符后重试。",
    },
    es: {
      question: "¿Qué tal le hemos atendido? Valore esta conversación",
      star: (n) => `${n} de 5`,
      comment: "¿Desea añadir algo? (opcional)",
      submit: "Enviar valoración",
      choose: "Elija primero de 1 a 5 estrellas.",
      thanks: (n) => `Gracias por valorar esta conversación con un ${n} de 5.`,
      failed: "No se ha podido enviar su valoración. Inténtelo de nuevo.",
      closed: "Esta conversación ya no se puede valorar.",
      invalid: "No se ha podido enviar su comentario. Elimine los caracteres poco habituales e inténtelo de nuevo.",
    },
    fr: {
      question: "Votre avis compte : évaluez cette conversation",
      star: (n) => `${n} sur 5`,
      comment: "Autre chose à ajouter ? (facultatif)",
      submit: "Envoyer l'évaluation",
      choose: "Choisissez d'abord de 1 à 5 étoiles.",
      thanks: (n) => `Merci d'avoir évalué cette conversation : ${n} sur 5.`,
      failed: "Votre évaluation n'a pas pu être envoyée. Veuillez réessayer.",
      closed: "Cette conversation ne peut plus être évaluée.",
      invalid: "Votre commentaire n'a pas pu être envoyé. Supprimez les caractères inhabituels et réessayez.",
    },
    de: {
      question: "Wie zufrieden waren Sie? Bewerten Sie diese Unterhaltung",
      star: (n) => `${n} von 5`,
      comment: "Möchten Sie noch etwas ergänzen? (optional)",
      submit: "Bewertung senden",
      choose: "Bitte wählen Sie zuerst 1 bis 5 Sterne.",
      thanks: (n) => `Vielen Dank für Ihre Bewertung dieser Unterhaltung: ${n} von 5.`,
      failed: "Ihre Bewertung konnte nicht gesendet werden. Bitte versuchen Sie es erneut.",
      closed: "Diese Unterhaltung kann nicht mehr bewertet werden.",
      invalid: "Ihr Kommentar konnte nicht gesendet werden. Bitte entfernen Sie ungewöhnliche Zeichen und versuchen Sie es erneut.",
    },
    pt: {
      question: "Como foi o nosso atendimento? Avalie esta conversa",
      star: (n) => `${n} de 5`,
      comment: "Quer acrescentar algo? (opcional)",
      submit: "Enviar avaliação",
      choose: "Escolha primeiro de 1 a 5 estrelas.",
      thanks: (n) => `Obrigado por avaliar esta conversa com ${n} de 5.`,
      failed: "Não foi possível enviar sua avaliação. Tente novamente.",
      closed: "Esta conversa não pode mais ser avaliada.",
      invalid: "Não foi possível enviar seu comentário. Remova caracteres incomuns e tente novamente.",
    },
    it: {
      question: "Com'è andata? Valuti questa conversazione",
      star: (n) => `${n} su 5`,
      comment: "Vuole aggiungere qualcosa? (facoltativo)",
      submit: "Invia valutazione",
      choose: "Scelga prima da 1 a 5 stelle.",
      thanks: (n) => `Grazie per aver valutato questa conversazione con ${n} su 5.`,
      failed: "Non è stato possibile inviare la sua valutazione. Riprovi.",
      closed: "Questa conversazione non può più essere valutata.",
      invalid: "Non è stato possibile inviare il suo commento. Rimuova eventuali caratteri insoliti e riprovi.",
    },
  };

  const RATING_CSS = `
    .rating { margin: 4px 0; padding: 10px 12px; border: 1px solid #dfe3dc; border-radius: 12px; background: #fff; }
    .rating p { margin: 0 0 6px; font-size: 14px; }
    .rating .stars { display: flex; gap: 4px; margin-bottom: 8px; }
    .rating .stars button {
      width: 34px; height: 34px; border: 1px solid #cfd5cb; border-radius: 8px; background: #fff;
      color: #8a9187; font-size: 18px; line-height: 1;
    }
    .rating .stars button.lit { color: var(--accent); border-color: var(--accent); }
    .rating .stars button:focus-visible, .rating button[type="submit"]:focus-visible {
      outline: 2px solid var(--accent); outline-offset: 2px;
    }
    .rating textarea {
      width: 100%; min-height: 52px; resize: vertical; border: 1px solid #cfd5cb; border-radius: 8px;
      padding: 6px 8px; font: inherit; font-size: 16px;
    }
    .rating button[type="submit"] {
      margin-top: 6px; border: 0; border-radius: 8px; padding: 6px 12px; background: var(--accent); color: #fff;
    }
    .rating .rating-note { display: block; margin-top: 6px; font-size: 12.5px; color: #4f564e; }
  `;
  shadow.append(el("style", { text: RATING_CSS }));

  const rating = { conversation: null, node: null, pending: false };

  // Called whenever the conversation's status reaches the widget; asks once per conversation.
  async function offerRating() {
    const conversation = state.conversation;
    if (!conversation || rating.pending) return;
    if (rating.conversation === conversation && rating.node && rating.node.isConnected) return;
    rating.pending = true;
    let current = null;
    try {
      current = await requestJson(conversationUrl("/rating"), { headers: authHeaders() });
    } catch {
      /* asked again on the next status change or reload */
    } finally {
      rating.pending = false;
    }
    if (!current || current.status !== "resolved" || state.conversation !== conversation) return;
    const S = RATING_STRINGS[languageIn(RATING_STRINGS, current.language)];
    rating.conversation = conversation;
    rating.node = append(
      current.rating ? ratingThanks(S, current.rating.score) : ratingForm(S, conversation),
      { scroll: true },
    );
  }

  function ratingThanks(S, score) {
    return el("p", { className: "notice rating-done", role: "status", text: S.thanks(score) });
  }

  function ratingForm(S, conversation) {
    let chosen = 0;
    const note = el("span", { className: "rating-note", role: "status" });
    const stars = [1, 2, 3, 4, 5].map((score) => {
      const button = el("button", { type: "button", "aria-label": S.star(score), "aria-pressed": "false", text: "★" });
      button.addEventListener("click", () => {
        chosen = score;
        for (const [index, star] of stars.entries()) {
          star.classList.toggle("lit", index < score);
          star.setAttribute("aria-pressed", String(index + 1 === score));
        }
        note.textContent = "";
      });
      return button;
    });
    const commentId = "rating-comment";
    const comment = el("textarea", { id: commentId, maxlength: "1000", rows: "2" });
    const submit = el("button", { type: "submit", text: S.submit });
    const form = el("form", { className: "rating", "aria-label": S.question }, [
      el("p", { text: S.question }),
      el("div", { className: "stars", role: "group", "aria-label": S.question }, stars),
      el("label", { className: "sr-only", for: commentId, text: S.comment }),
      comment,
      submit,
      note,
    ]);
    comment.setAttribute("placeholder", S.comment);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!chosen) {
        note.textContent = S.choose;
        return;
      }
      submit.disabled = true;
      try {
        const saved = await requestJson(
          `${api}/${encodeURIComponent(conversation.conversation_id)}/rating`,
          {
            method: "POST",
            headers: { Authorization: `Bearer ${conversation.customer_token}`, "Content-Type": "application/json" },
            body: JSON.stringify({ score: chosen, comment: comment.value.trim() || null }),
          },
        );
        const done = ratingThanks(S, saved.score);
        form.replaceWith(done);
        rating.node = done;
      } catch (error) {
        // The server's own words are English: the customer is told in the bot's language. A 409:
        // rated already (another tab), or no longer resolved; sending again cannot help.
        const status = error instanceof HttpError ? error.status : null;
        submit.disabled = status === 409;
        note.textContent = status === 409 ? S.closed : status === 422 ? S.invalid : S.failed;
      }
    });
    return form;
  }
