// The console's few behaviours: copy buttons, confirmations, and choices that apply at once
// (a select marked data-autosubmit sends its form when picked; the buttons marked
// data-noscript, which do that without script, are hidden). Pages work without it.
//
// A pick made with the pointer applies at once. From the keyboard, the arrow keys move
// through the choices without leaving the page (each change would load a page and lose the
// focus); Enter applies the choice, and the form's button comes back for those who look
// for it.
for (const sel of document.querySelectorAll('select[data-autosubmit]')) {
  let keys = false;
  sel.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      if (sel.value) sel.form.submit();
      return;
    }
    if (ev.key === 'Tab' || ev.key === 'Shift') return;
    keys = true;
    for (const b of sel.form.querySelectorAll('[data-noscript]')) b.hidden = false;
  });
  sel.addEventListener('pointerdown', () => { keys = false; });
  sel.addEventListener('change', () => { if (!keys && sel.value) sel.form.submit(); });
}
for (const b of document.querySelectorAll('[data-noscript]')) b.hidden = true;
document.addEventListener('click', (ev) => {
  const b = ev.target.closest('button[data-copy]');
  if (!b) return;
  const el = document.getElementById(b.dataset.copy);
  if (!el) return;
  navigator.clipboard.writeText(el.textContent.trim()).then(() => {
    b.textContent = 'Copied';
    setTimeout(() => { b.textContent = 'Copy'; }, 1500);
  }, () => {
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  });
});
document.addEventListener('submit', (ev) => {
  const f = ev.target.closest('form[data-confirm]');
  if (f && !window.confirm(f.dataset.confirm)) ev.preventDefault();
});
