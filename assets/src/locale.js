// dateLocale is the language dates and times are written in: the
// reader's setting (Settings; <html data-locale>, web.Layout), else the
// browser's (undefined to Intl).
export function dateLocale() {
  return document.documentElement.dataset.locale || undefined;
}
