import { html, SafeHtml } from './html.js';

/** What every page needs: where the dashboard is mounted, the CSRF token for forms, whether actions are allowed. */
export interface PageCtx {
  /** The mount path as the browser sees it, no trailing slash (e.g. `/alkstore`). */
  readonly base: string;
  readonly csrf: string;
  readonly readOnly: boolean;
  /** The database clock. */
  readonly now: number;
  /** A one-line result of the last action (from the redirect). */
  readonly flash: string | null;
  /** `admin` acts, `viewer` only reads (then `readOnly` is true). */
  readonly role: 'admin' | 'viewer';
  /** The CSP nonce of this response's one script (live updates). */
  readonly nonce: string;
  /** How often the live region refreshes while the tab is visible (ms). */
  readonly liveIntervalMs: number;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f8fa}
header{background:#24292f;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center}
header a{color:#fff;text-decoration:none}header a.on{text-decoration:underline}
header b{margin-right:16px}main{padding:16px}
table{border-collapse:collapse;background:#fff;width:100%;margin:8px 0}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eaeef2}td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{margin:0;max-width:520px;max-height:160px;overflow:auto;white-space:pre-wrap;word-break:break-all;font-size:12px}
.flash{background:#dafbe1;border:1px solid #4ac26b;padding:6px 10px;margin-bottom:8px}
.warn{color:#bc4c00}.ok{color:#1a7f37;font-weight:600}.dead{color:#cf222e;font-weight:600}
form.inline{display:inline}button{cursor:pointer}
button.danger{color:#fff;background:#cf222e;border:1px solid #a40e26}
nav.states a{margin-right:8px}nav.states a.on{font-weight:700}
.chart svg{background:#fff;border:1px solid #d0d7de}.chart rect.ok{fill:#2da44e}.chart rect.bad{fill:#cf222e}
.chart text.axis{font-size:10px;fill:#57606a}.chart polyline{fill:none;stroke-width:1.5}.chart .p50{stroke:#0969da;fill:none}.chart circle.p50{fill:#0969da}
.chart polyline.p95{stroke:#8250df;stroke-dasharray:4 3}.chart circle.p95{fill:#8250df}
.chart line.grid{stroke:#eaeef2}.chart line.tick{stroke:#8c959f}figcaption{color:#57606a;font-size:12px}
.confirm{background:#fff;border:2px solid #cf222e;padding:16px;max-width:640px}
form.search{background:#fff;border:1px solid #d0d7de;padding:8px;display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin:8px 0}
form.search label{display:flex;flex-direction:column;font-size:12px;color:#57606a}
.bulk{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;margin:8px 0}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;background:#fff;border:1px solid #d0d7de;padding:8px;margin:8px 0}
dl.kv dt{color:#57606a}dl.kv dd{margin:0}
ol.timeline{background:#fff;border:1px solid #d0d7de;padding:8px 8px 8px 32px;margin:8px 0}ol.timeline li{margin:4px 0}
pre.full{max-width:none;max-height:none}#live-status{color:#8c959f;font-size:12px;margin-left:auto}
form.job-form{background:#fff;border:1px solid #d0d7de;padding:8px;display:flex;flex-direction:column;gap:8px;max-width:760px}
form.job-form label{display:flex;flex-direction:column;font-size:12px;color:#57606a}form.job-form textarea{font:12px monospace}
table.compact td{padding:1px 6px;white-space:nowrap}h1{font-size:22px;margin:4px 0 8px}
table.compact td.line{max-width:min(360px,20vw);overflow:hidden;text-overflow:ellipsis}
table.compact code{font-size:12px}table.compact form.inline button{font-size:12px;padding:0 4px}td.error{color:#cf222e}
details.strip{background:#fff;border:1px solid #d0d7de;padding:2px 8px;margin:4px 0}form#selected{padding:2px 8px;margin:4px 0}
details.strip summary{cursor:pointer;color:#57606a}
progress{width:320px}.charts{display:flex;gap:16px;flex-wrap:wrap}.charts figure{margin:0;max-width:602px}
`;

/**
 * Live updates: while the tab is visible, fetch this same page every few
 * seconds and swap in its `#live` region; stop while the tab is hidden. Same
 * origin only (CSP connect-src 'self'); the fetched HTML is the server's own
 * escaped page, parsed inertly by DOMParser.
 */
const LIVE_SCRIPT = `(()=>{const s=document.getElementById('live-status');const regions=()=>Array.from(document.querySelectorAll('[data-live]'));
if(!s||regions().length===0)return;const every=Number(document.body.dataset.every)||5000;let t=null;
const shown=()=>document.visibilityState==='visible';
async function tick(){if(!shown())return;try{const res=await fetch(location.href,{headers:{'x-alkstore-live':'1'},credentials:'same-origin',cache:'no-store'});
if(!res.ok){s.textContent='live updates failed: HTTP '+res.status;s.dataset.state='error';return;}
const text=await res.text();if(!shown())return;const doc=new DOMParser().parseFromString(text,'text/html');
for(const r of regions()){const n=doc.getElementById(r.id);if(n)r.replaceChildren(...Array.from(n.childNodes).map((c)=>document.importNode(c,true)));}
s.textContent='live, updated '+new Date().toLocaleTimeString();s.dataset.state='on';}
catch(e){if(shown()){s.textContent='live updates failed: '+String(e);s.dataset.state='error';}}}
function plan(){clearInterval(t);t=null;if(shown()){t=setInterval(tick,every);s.textContent='live';s.dataset.state='on';}
else{s.textContent='live updates paused (tab hidden)';s.dataset.state='paused';}}
document.addEventListener('visibilitychange',()=>{plan();if(shown())void tick();});plan();})();`;

/** A region the page refreshes in place (counts, charts, job lists): the live script swaps in the same id's content. */
export function live(id: string, body: SafeHtml): SafeHtml {
  return html`<div id="${id}" data-live>${body}</div>`;
}

/** A duration for humans: 950 ms, 12 s, 4 min, 3 h, 2 d. */
export function ago(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} d`;
}

/** An instant as the dashboard writes it absolutely: `2026-12-05 16:28:01 UTC` (the zone always named). */
export function absolute(at: number): string {
  return `${new Date(at).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A relative time ("57 s ago"), its absolute time with the zone on hover. */
export function when(at: number | null, now: number): SafeHtml {
  if (at === null) return html`–`;
  const d = at - now;
  const rel = d >= 0 ? `in ${ago(d)}` : `${ago(-d)} ago`;
  return html`<time datetime="${new Date(at).toISOString()}" title="${absolute(at)}">${rel}</time>`;
}

/** An absolute time with the zone, the relative one beside it (job pages, the audit log). */
export function whenFull(at: number | null, now: number): SafeHtml {
  if (at === null) return html`–`;
  return html`${absolute(at)} (${when(at, now)})`;
}

export function link(ctx: PageCtx, path: string, params: Record<string, string | undefined> = {}): string {
  const q = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined);
  const search = q.length ? `?${new URLSearchParams(q).toString()}` : '';
  // The home page is the mount path itself, never `mount/`: Fastify routes `/x/` apart from `/x`.
  return `${path ? `${ctx.base}/${path}` : ctx.base}${search}`;
}

/** A POST form for one action; the server answers with a confirmation page before doing it. */
export function action(
  ctx: PageCtx,
  name: string,
  label: string,
  fields: Record<string, string | number>,
  danger = false,
): SafeHtml {
  if (ctx.readOnly) return html``;
  const hidden = Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${String(v)}" />`);
  return html`<form class="inline" method="post" action="${ctx.base}/action">
    <input type="hidden" name="csrf" value="${ctx.csrf}" /><input
      type="hidden"
      name="action"
      value="${name}"
    />${hidden}<button type="submit" class="${danger ? 'danger' : ''}" data-action="${name}">${label}</button>
  </form>`;
}

/** The page frame: header navigation, flash line, body. */
export function layout(ctx: PageCtx, title: string, active: string, body: SafeHtml): string {
  const nav = [
    ['', 'Queues'],
    ['dead', 'Dead letters'],
    ['schedules', 'Schedules'],
    ['streams', 'Streams'],
    ['outboxes', 'Outboxes'],
    ['workers', 'Workers'],
    ['workflows', 'Workflows'],
    ['audit', 'Audit log'],
  ].map(([p, label]) => html`<a href="${link(ctx, p!)}" class="${p === active ? 'on' : ''}">${label}</a>`);
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width" />
        <meta name="csrf-token" content="${ctx.readOnly ? '' : ctx.csrf}" />
        <title>${title} · alkstore</title>
        <style>
          ${STYLE}
        </style>
      </head>
      <body data-every="${ctx.liveIntervalMs}">
        <header>
          <b>alkstore</b>${nav}${ctx.readOnly ? html`<span class="warn" id="role">read-only</span>` : ''}<span
            id="live-status"
          ></span>
        </header>
        <main>
          <h1>${title}</h1>
          ${ctx.flash ? html`<p class="flash" role="status">${ctx.flash}</p>` : ''}${body}
        </main>
        <script nonce="${ctx.nonce}">
          ${new SafeHtml(LIVE_SCRIPT)};
        </script>
      </body>
    </html>`.value;
}

/** A payload as pretty JSON, cut at `max` characters. */
export function payloadText(value: unknown, max = 4000): string {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  return text.length > max ? `${text.slice(0, max)}\n… (${text.length} characters)` : text;
}
