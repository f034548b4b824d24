// Feedback on answers (web/message.templ feedbackButtons): 👍 or 👎
// through rate_message; clicking the pressed one takes the rating back;
// after a rating, an optional comment goes with it.

// rate rates the answer of button's message in conversation id.
export async function rate(conn, button, conversationId) {
  const msg = button.closest('.msg');
  const box = button.closest('.feedback');
  if (!msg?.dataset.id || !conversationId || !box) return; // still streaming: no id yet
  const rating = box.dataset.rating === button.dataset.rating ? '' : button.dataset.rating;
  const res = await conn.request('rate_message', { conversation_id: conversationId, message_id: msg.dataset.id, rating }, { retry: false });
  show(box, res.rating || '');
  const form = box.querySelector('.fb-comment');
  if (!form) return;
  form.hidden = !res.rating;
  const input = form.querySelector('input');
  const send = () => {
    conn.request('rate_message', { conversation_id: conversationId, message_id: msg.dataset.id, rating: box.dataset.rating, comment: input.value.trim() }, { retry: false })
      .then(() => { form.hidden = true; input.value = ''; box.dataset.commented = 'true'; }, (err) => { input.setCustomValidity(err.message); input.reportValidity(); });
  };
  form.querySelector('button').onclick = send;
  input.onkeydown = (e) => { if (e.key === 'Enter') { e.preventDefault(); send(); } };
  if (!form.hidden) input.focus();
}

// show marks box's buttons with rating ("up", "down" or "").
function show(box, rating) {
  box.dataset.rating = rating;
  for (const b of box.querySelectorAll('[data-action="rate"]')) b.setAttribute('aria-pressed', String(b.dataset.rating === rating));
}
