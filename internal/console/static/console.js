// The console's few behaviours: copy buttons, confirmations, and choices that apply at once
// (a select marked data-autosubmit sends its form when changed; the buttons marked
// data-noscript, which do that without script, are hidden). Pages work without it.
for (const sel of document.querySelectorAll('select[data-autosubmit]')) {
  sel.addEventListener('change', () => sel.form.submit());
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
