// Helpers of the management pages (schedules, settings, projects: app.js mounts them).

// refresh fetches this page again and swaps in its element of id, keeping
// everything else (a form being filled, a key shown once).
export async function refresh(id) {
  const res = await fetch(location.pathname, { headers: { Accept: 'text/html' }, credentials: 'same-origin' });
  if (!res.ok) throw new Error(`reload failed: ${res.status}`);
  const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
  const fresh = doc.getElementById(id);
  const old = document.getElementById(id);
  if (fresh && old) old.replaceWith(document.importNode(fresh, true));
}

// showError shows an op's error (the server's message, which names the
// bad field) in el, or hides el when err is null.
export function showError(el, err) {
  if (!el) return;
  el.hidden = !err;
  el.textContent = err ? err.message : '';
}
