/**
 * Writes docs/img/overview.svg, the README's picture: one transaction spanning the business row,
 * a queue job, an outbox message and a workflow start; the Store's mechanisms on one database; the
 * workers, the dispatcher and the brokers around it. The picture is this file: edit the boxes
 * below and run it again.
 *
 *   npx -y tsx scripts/overview-diagram.ts [--out docs/img/overview.svg]
 *
 * test/unit/overview-diagram.test.ts checks the committed SVG is what this script writes.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
  label: string;
  sub?: string;
  fill: string;
}

const WIDTH = 900;
const HEIGHT = 430;

/** Escapes text for SVG. */
function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function box(b: Box): string {
  const lines = [
    `<rect x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}" rx="6" fill="${b.fill}" stroke="#334155"/>`,
    `<text x="${b.x + b.w / 2}" y="${b.y + (b.sub ? b.h / 2 - 3 : b.h / 2 + 5)}" text-anchor="middle" font-size="13">${esc(b.label)}</text>`,
  ];
  if (b.sub)
    lines.push(
      `<text x="${b.x + b.w / 2}" y="${b.y + b.h / 2 + 14}" text-anchor="middle" font-size="11" fill="#475569">${esc(b.sub)}</text>`,
    );
  return lines.join('\n');
}

function arrow(x1: number, y1: number, x2: number, y2: number, label?: string): string {
  const line = `<line x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2}" stroke="#334155" stroke-width="1.5" marker-end="url(#head)"/>`;
  if (!label) return line;
  const lx = (x1 + x2) / 2;
  const ly = (y1 + y2) / 2 - 6;
  return `${line}\n<text x="${lx}" y="${ly}" text-anchor="middle" font-size="11" fill="#475569">${esc(label)}</text>`;
}

/** The SVG text, deterministic (no dates, no random ids). */
export function overviewSvg(): string {
  const tx = '#fef3c7';
  const mech = '#e0f2fe';
  const run = '#dcfce7';
  const ext = '#f1f5f9';
  const inTx: Box[] = [
    { x: 40, y: 90, w: 200, h: 40, label: 'your business row', sub: 'TypeORM, Prisma, knex, pg…', fill: '#fff' },
    { x: 40, y: 140, w: 200, h: 36, label: 'tx.enqueue(queue, job)', fill: '#fff' },
    { x: 40, y: 186, w: 200, h: 36, label: 'tx.outboxEnqueue(outbox, msg)', fill: '#fff' },
    { x: 40, y: 232, w: 200, h: 36, label: 'workflows.start(run, { tx })', fill: '#fff' },
    { x: 40, y: 278, w: 200, h: 36, label: 'tx.publish / tx.notify', fill: '#fff' },
  ];
  const mechanisms: Box[] = [
    { x: 340, y: 90, w: 110, h: 40, label: 'queues', sub: 'flows, limits', fill: mech },
    { x: 460, y: 90, w: 110, h: 40, label: 'outbox', sub: 'receipts', fill: mech },
    { x: 340, y: 140, w: 110, h: 40, label: 'workflows', sub: 'journal', fill: mech },
    { x: 460, y: 140, w: 110, h: 40, label: 'streams', sub: 'offsets', fill: mech },
    { x: 340, y: 190, w: 110, h: 40, label: 'notify', sub: 'wake on commit', fill: mech },
    { x: 460, y: 190, w: 110, h: 40, label: 'locks', sub: 'TTL', fill: mech },
    { x: 340, y: 240, w: 110, h: 40, label: 'scheduler', sub: 'one leader', fill: mech },
    { x: 460, y: 240, w: 110, h: 40, label: 'inbox', sub: 'dedup by id', fill: mech },
  ];
  const runners: Box[] = [
    { x: 660, y: 70, w: 200, h: 44, label: '@QueueHandler, QueueWorker', sub: 'claim, ack, retry, dead', fill: run },
    { x: 660, y: 130, w: 200, h: 44, label: 'workflow runner', sub: 'steps replayed from journal', fill: run },
    { x: 660, y: 190, w: 200, h: 44, label: 'outbox dispatcher', sub: 'handler or publisher', fill: run },
    { x: 660, y: 290, w: 200, h: 44, label: 'broker', sub: 'JetStream, RabbitMQ, MQTT, Redis', fill: ext },
    {
      x: 340,
      y: 350,
      w: 230,
      h: 44,
      label: 'inbox consumer (another service)',
      sub: 'claim + effect in one tx',
      fill: run,
    },
  ];
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="Helvetica, Arial, sans-serif">`,
    '<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">',
    '<path d="M0,0 L10,5 L0,10 z" fill="#334155"/></marker></defs>',
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<rect x="25" y="55" width="230" height="275" rx="10" fill="${tx}" stroke="#b45309" stroke-dasharray="6 4"/>`,
    '<text x="140" y="76" text-anchor="middle" font-size="14" font-weight="bold">one transaction</text>',
    '<text x="140" y="348" text-anchor="middle" font-size="11" fill="#92400e">all of it commits, or none of it</text>',
    `<rect x="325" y="40" width="260" height="255" rx="10" fill="#f8fafc" stroke="#0369a1"/>`,
    '<text x="455" y="62" text-anchor="middle" font-size="14" font-weight="bold">Store: PostgreSQL or SQLite</text>',
    '<text x="455" y="22" text-anchor="middle" font-size="12" fill="#475569">tables in your own database, no extra server</text>',
    ...inTx.map(box),
    ...mechanisms.map(box),
    ...runners.map(box),
    arrow(255, 190, 323, 190, 'commit'),
    arrow(585, 110, 658, 92),
    arrow(585, 160, 658, 152),
    arrow(585, 212, 658, 212),
    arrow(760, 234, 760, 288, 'publish, wait for ack'),
    arrow(660, 320, 572, 366),
    arrow(455, 350, 510, 282, 'claim id'),
    '</svg>',
  ];
  return `${parts.join('\n')}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: 'docs/img/overview.svg' } } });
  writeFileSync(resolve(values.out!), overviewSvg());
  console.log(`wrote ${values.out}`);
}
