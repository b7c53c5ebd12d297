// The playground's live price, and a running job's live status: progress, logs, and its
// outputs once it settles. Both pages work without it (the price of the form as first shown;
// a reload for the status).
(() => {
  // stamp writes a time as the server's pages do: 2006-01-02 15:04:05 UTC.
  const stamp = (t) => {
    const d = new Date(t);
    return Number.isNaN(d.getTime()) ? String(t) : d.toISOString().slice(0, 19).replace('T', ' ') + ' UTC';
  };

  // A fetch the console answered with its sign-in page: the session ended (expired, or signed
  // out in another tab). No script here navigates on its own for that: the page stays as it
  // is, says so, and keeps what was typed (keepForm) for the sign-in link to bring back.
  const signedOut = (res) => res.redirected && new URL(res.url).pathname === '/console/sign-in';
  const unsentKey = 'modelexec.playground.unsent';

  // keepForm puts the form's fields in this tab's sessionStorage; restoreForm puts them back
  // once, on the playground of the same model.
  function keepForm(form) {
    const fields = [];
    for (const el of form.elements) {
      if (!el.name || !el.name.startsWith('in.') || el.type === 'hidden') continue;
      fields.push([el.name, el.type === 'checkbox' ? String(el.checked) : el.value]);
    }
    try {
      sessionStorage.setItem(unsentKey, JSON.stringify({ model: form.elements.model.value, fields }));
    } catch (e) {
      // Storage refused (private mode, full): the page itself still holds the fields.
    }
  }
  function restoreForm(form) {
    let saved = null;
    try {
      saved = JSON.parse(sessionStorage.getItem(unsentKey) || 'null');
    } catch (e) {
      saved = null;
    }
    if (!saved || saved.model !== form.elements.model.value) return false;
    sessionStorage.removeItem(unsentKey);
    for (const [name, value] of saved.fields || []) {
      for (const el of form.querySelectorAll(`[name="${CSS.escape(name)}"]`)) {
        if (el.type === 'checkbox') el.checked = value === 'true';
        else if (el.type !== 'hidden') el.value = value;
      }
    }
    return true;
  }

  // sessionEnded says in box that the session ended, with a link to sign in again that leads
  // back here, where the fields kept come back.
  function sessionEnded(box, form, what) {
    keepForm(form);
    box.replaceChildren();
    const p = document.createElement('p');
    p.className = 'error session-ended';
    p.setAttribute('role', 'alert');
    p.append(`Your session ended, so ${what}. `);
    const a = document.createElement('a');
    a.className = 'sign-in-again';
    a.href = '/console/sign-in?next=' + encodeURIComponent(window.location.pathname + window.location.search);
    a.textContent = 'Sign in again';
    p.append(a, ': what you typed here is kept, and comes back on this page.');
    box.append(p);
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
        if (signedOut(res)) {
          sessionEnded(box, form, 'the price cannot be shown');
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
          box.append(strong, q.credits === 1 ? ' credit ' : ' credits ');
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
    if (restoreForm(form)) refresh(); // back from signing in again: the fields as they were
    runInPlace(form);
  }

  // runInPlace keeps a run on the playground: the form is sent as it is without script (the
  // same idempotency key, so a second send is the same job and charges once), the job is
  // followed through its live view, and its outputs are shown beside the fields. A refusal is
  // shown the ordinary way: the form is then sent again as a page, which answers the same
  // refusal with the fields kept.
  function runInPlace(form) {
    const out = document.getElementById('run-output');
    const run = document.getElementById('run');
    if (!out || !run) return;
    let busy = false;
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (busy) return;
      busy = true;
      const label = run.textContent;
      run.disabled = true;
      run.textContent = 'Running…';
      try {
        const res = await fetch(form.action, { method: 'POST', body: new FormData(form), credentials: 'same-origin' });
        if (signedOut(res)) {
          sessionEnded(out, form, 'the run was not sent');
          throw new SessionEnded();
        }
        const answer = res.redirected ? new URL(res.url) : null;
        const m = answer && answer.pathname.match(/^\/console\/jobs\/([^/]+)$/);
        if (!m) {
          form.submit();
          return;
        }
        // The submit answered with a job: this form's key is spent, whatever becomes of the
        // following below, so the next Run is a new request.
        form.elements.idempotency_key.value = freshKey();
        await follow(out, decodeURIComponent(m[1]), res.url, answer.searchParams.has('replayed'), form);
      } catch (e) {
        if (!(e instanceof SessionEnded)) {
          out.textContent = 'The run could not be followed here: open the Jobs page to see it.';
        }
      }
      run.disabled = false;
      run.textContent = label;
      busy = false;
    });
  }

  // SessionEnded stops a run's script once the page says the session ended.
  class SessionEnded extends Error {}

  // freshKey names the next run, as the server does for a new page.
  function freshKey() {
    const b = new Uint8Array(18);
    crypto.getRandomValues(b);
    return 'console-' + btoa(String.fromCharCode(...b)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  // follow polls a job's live view until it settles, then shows its outputs. A lost poll (a
  // network drop, an error answer) is tried again, as the job page's poller does; only
  // lostPolls of them in a row give up. replayed says the submit answered an earlier run of
  // this very form, not a new one.
  const lostPolls = 10;
  async function follow(out, id, pageURL, replayed, form) {
    out.replaceChildren();
    if (replayed) {
      const note = document.createElement('p');
      note.className = 'flash';
      note.id = 'run-replayed';
      note.textContent = 'This form was already sent: showing the run it started. Nothing was run or charged again.'; // as the job page says it (replayedText)
      out.append(note);
    }
    const head = document.createElement('p');
    const state = document.createElement('span');
    state.id = 'run-state';
    state.className = 'badge queued';
    state.textContent = 'queued';
    head.append(`Job ${id} `, state);
    const bar = document.createElement('progress');
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute('aria-label', 'Progress of the run');
    out.append(head, bar);
    let lost = 0;
    for (let i = 0; i < 5000; i++) {
      let j = null;
      try {
        const res = await fetch(`/console/jobs/${encodeURIComponent(id)}/live`, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
        if (signedOut(res)) {
          sessionEnded(out, form, `job ${id} cannot be followed here (it runs on: the Jobs page shows it)`);
          throw new SessionEnded();
        }
        if (res.ok) j = await res.json();
      } catch (e) {
        if (e instanceof SessionEnded) throw e;
        j = null;
      }
      if (!j) {
        if (++lost >= lostPolls) throw new Error('the live view could not be read');
      } else {
        lost = 0;
        state.textContent = j.state;
        state.className = 'badge ' + j.state;
        bar.value = Math.round((j.progress || 0) * 100);
        const balance = document.getElementById('balance');
        if (balance && typeof j.balance === 'number') { // as the page writes it: 1,234 credits
          balance.textContent = `${j.balance.toLocaleString('en-US')} credit${Math.abs(j.balance) === 1 ? '' : 's'}`;
        }
        if (j.settled) {
          bar.remove();
          showOutputs(out, j, pageURL);
          return;
        }
      }
      await new Promise((ok) => setTimeout(ok, 700));
    }
  }

  function showOutputs(out, j, pageURL) {
    for (const w of j.warnings || []) {
      const d = document.createElement('div');
      d.className = 'quote-warning run-warning';
      d.textContent = w;
      out.append(d);
    }
    if (j.error_code) {
      const p = document.createElement('p');
      p.className = 'error';
      p.textContent = `The run failed (${j.error_code}); the job page says why.`;
      out.append(p);
    }
    if (j.links_refused) { // the download was refused: the files are listed without links
      const p = document.createElement('p');
      p.className = 'error';
      p.id = 'links-refused';
      p.textContent = j.links_refused;
      out.append(p);
    }
    for (const o of j.outputs || []) {
      const fig = document.createElement('figure');
      fig.className = 'output ' + o.kind;
      if (!o.url) {
        const cap = document.createElement('figcaption');
        cap.textContent = `${o.name} (${o.content_type}, ${o.bytes} bytes; no link)`;
        fig.append(cap);
        out.append(fig);
        continue;
      }
      let media = null;
      if (o.kind === 'image') {
        media = document.createElement('img');
        media.alt = 'output ' + o.name;
      } else if (o.kind === 'audio' || o.kind === 'video') {
        media = document.createElement(o.kind);
        media.controls = true;
        media.preload = 'metadata';
      }
      if (media) {
        media.src = o.url;
        fig.append(media);
      }
      const a = document.createElement('a');
      a.href = o.url;
      a.download = o.name;
      a.textContent = 'Download ' + o.name;
      fig.append(a);
      out.append(fig);
    }
    const link = document.createElement('a');
    link.href = pageURL;
    link.className = 'job-link';
    link.textContent = 'Open the job page (charge, logs, inputs)';
    out.append(link);
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
        if (signedOut(res)) { // said on the page, which stays: a reload leads to the sign-in
          const p = document.createElement('p');
          p.className = 'error session-ended';
          p.setAttribute('role', 'alert');
          p.textContent = 'Your session ended, so this job is no longer followed here: reload the page to sign in again.';
          job.prepend(p);
          return;
        }
        if (res.ok) {
          const j = await res.json();
          state.textContent = j.state;
          state.className = 'badge ' + j.state;
          if (progress) progress.value = Math.round((j.progress || 0) * 100);
          if (position) position.textContent = j.queue_position != null ? `${j.queue_position} ahead in the queue` : '';
          logs.textContent = j.logs.map((l) => `${stamp(l.timestamp)} ${l.level} ${l.message}`).join('\n');
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
