// The console's few behaviours: copy buttons and confirmations. Pages work without it.
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
