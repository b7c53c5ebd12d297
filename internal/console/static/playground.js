// The playground's live price, and a running job's live status: progress, logs, and its
// outputs once it settles. Both pages work without it (the price of the form as first shown;
// a reload for the status).
(() => {
  // Picking a model opens its form at once; the Choose button is for pages without script.
  const pick = document.getElementById('model-select');
  if (pick) {
    const choose = document.getElementById('choose-model');
    if (choose) choose.hidden = true;
    pick.addEventListener('change', () => { if (pick.value) pick.form.submit(); });
  }

  const form = document.getElementById('run-form');
  if (form && form.dataset.quote) {
    const box = document.getElementById('quote');
    let timer = null;
    let seq = 0;
    const refresh = async () => {
      const mine = ++seq;
      const body = new FormData(form);
      try {
        const res = await fetch(form.dataset.quote, { method: 'POST', body, credentials: 'same-origin' });
        if (mine !== seq) return;
        if (res.redirected) { // the session ended: the console asks to sign in again
          window.location.href = res.url;
          return;
        }
        if (!res.ok) {
          box.textContent = 'The price could not be worked out just now.';
          return;
        }
        const q = await res.json();
        box.replaceChildren();
        if (q.ok) {
          box.append('Price: ');
          const strong = document.createElement('strong');
          strong.id = 'quote-credits';
          strong.textContent = q.credits.toLocaleString('en-US');
          box.append(strong, ' credits ');
          const units = document.createElement('span');
          units.className = 'muted';
          units.id = 'quote-units';
          units.textContent = `(${q.units} ${q.unit})`;
          box.append(units);
          for (const w of q.warnings || []) {
            const d = document.createElement('div');
            d.className = 'quote-warning';
            d.textContent = w;
            box.append(d);
          }
        } else {
          const msg = document.createElement('span');
          msg.className = 'muted';
          msg.id = 'quote-message';
          msg.textContent = q.message || '';
          box.append(msg);
          for (const v of q.violations || []) {
            const d = document.createElement('div');
            d.className = 'muted';
            d.textContent = v;
            box.append(d);
          }
        }
      } catch (e) {
        box.textContent = 'The price could not be worked out just now.';
      }
    };
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(refresh, 250);
    };
    form.addEventListener('input', later);
    form.addEventListener('change', later);
    // One submit per form: the idempotency key makes a second one harmless, this makes it rare.
    form.addEventListener('submit', () => {
      const b = document.getElementById('run');
      if (b) setTimeout(() => { b.disabled = true; b.textContent = 'Running…'; }, 0);
    });
  }

  const job = document.getElementById('job');
  if (job && job.dataset.settled === 'false') {
    const state = document.getElementById('job-state');
    const progress = document.getElementById('job-progress');
    const position = document.getElementById('job-position');
    const logs = document.getElementById('job-logs');
    const poll = async () => {
      try {
        const res = await fetch(job.dataset.live, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
        if (res.redirected) {
          window.location.href = res.url;
          return;
        }
        if (res.ok) {
          const j = await res.json();
          state.textContent = j.state;
          state.className = 'badge ' + j.state;
          if (progress) progress.value = Math.round((j.progress || 0) * 100);
          if (position) position.textContent = j.queue_position != null ? `${j.queue_position} ahead in the queue` : '';
          logs.textContent = j.logs.map((l) => `${l.timestamp} ${l.level} ${l.message}`).join('\n');
          if (j.settled) {
            // The settled page has the charge, the history, the event and the players.
            window.location.reload();
            return;
          }
        }
      } catch (e) {
        // A lost poll is tried again below.
      }
      setTimeout(poll, 700);
    };
    setTimeout(poll, 300);
  }
})();
