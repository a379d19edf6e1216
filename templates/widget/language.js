  // language.js: the language of the widget's own texts on this page (data-lang, else the page's
  // lang), chosen once every language's STRINGS is in; T, its texts.

  const language = languageIn(STRINGS, lang);
  const T = STRINGS[language];
  const title = script.dataset.name || T.chat;
