// Keyboard shortcuts. Their list belongs to Go (web/shortcut.go): the
// dialog "?" opens renders it, one row per chord, and this binds each
// row's data-keys to its data-action, which the app supplies. A chord
// that types a character ("?") does nothing while the focus is in a text
// field (data-typing="false"); chords with Ctrl or ⌘, and Escape, work
// there too. An action that has nothing to do returns false and leaves
// the key to the page (Escape still closes a menu when nothing runs).

// parse turns "Mod+Shift+O" into {mod, shift, alt, key}.
function parse(keys) {
  const parts = keys.split('+');
  const key = parts.pop();
  return { mod: parts.includes('Mod'), shift: parts.includes('Shift'), alt: parts.includes('Alt'), key: key.toLowerCase() };
}

// matches reports whether keydown e is chord c. Shift is compared for
// letters and named keys only: "?" is Shift+/ on some layouts, not on
// others, and e.key says which character it typed.
function matches(c, e) {
  if (c.mod !== (e.ctrlKey || e.metaKey) || c.alt !== e.altKey) return false;
  const key = (e.key || '').toLowerCase();
  if (key !== c.key) return false;
  const printable = c.key.length === 1 && !/[a-z0-9]/.test(c.key);
  return printable || c.shift === e.shiftKey;
}

// typing reports whether el takes text: a text field or an editable region.
export function typing(el) {
  if (!el || el.nodeType !== 1) return false;
  if (el.isContentEditable || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT') return true;
  return el.tagName === 'INPUT' && !['button', 'checkbox', 'radio', 'submit', 'reset', 'file', 'range', 'color', 'image'].includes(el.type);
}

export class Shortcuts {
  // dialog is web.ShortcutsDialog; actions maps an action to a function
  // of the keydown event.
  constructor(dialog, actions) {
    this.dialog = dialog;
    this.actions = actions;
    this.bindings = [...(dialog?.querySelectorAll('[data-keys]') || [])].map((tr) => ({
      action: tr.dataset.action, chord: parse(tr.dataset.keys), typing: tr.dataset.typing === 'true',
    }));
    document.addEventListener('keydown', (e) => this.key(e));
  }

  key(e) {
    if (e.defaultPrevented || e.isComposing || e.repeat) return;
    const inField = typing(e.target);
    const b = this.bindings.find((x) => matches(x.chord, e));
    if (!b || (inField && !b.typing)) return;
    const run = b.action === 'shortcuts' ? () => this.toggle() : this.actions[b.action];
    if (run && run(e) !== false) e.preventDefault();
  }

  // toggle opens the list of shortcuts, or closes it.
  toggle() {
    if (!this.dialog) return false;
    if (this.dialog.open) this.dialog.close();
    else if (!document.querySelector('dialog[open]')) this.dialog.showModal();
    else return false;
    return true;
  }
}
