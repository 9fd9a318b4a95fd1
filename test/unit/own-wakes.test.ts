import { describe, expect, it } from '@jest/globals';
import { OwnWakes } from '../../lib/engines/postgres/notify/own-wakes.js';

/**
 * PostgreSQL engine: the bookkeeping that delivers a store's own wakes
 * in-process and drops their NOTIFY echo. The orders the LISTEN connection
 * and the statement's reply can arrive in are driven by hand here; the
 * contract suite (notify-commit) runs the same paths against PostgreSQL.
 */
function setup(listening = true) {
  const delivered: string[] = [];
  const own = new OwnWakes(
    's1',
    (p) => delivered.push(p),
    () => listening,
  );
  /** What the listener does with a notification: the store's dispatch. */
  const echo = (tagged: string): boolean => {
    const end = tagged.indexOf(';');
    const wakes = own.echo(tagged.slice(1, end), tagged);
    if (wakes) delivered.push(tagged.slice(end + 1));
    return wakes;
  };
  return { own, delivered, echo };
}

/** An autocommit statement whose reply is held until `reply` is called. */
function heldStatement<R>() {
  let sent = '';
  let reply!: (r: R) => void;
  let fail!: (e: Error) => void;
  const statement = (w: string): Promise<R> => {
    sent = w;
    return new Promise<R>((res, rej) => {
      reply = res;
      fail = rej;
    });
  };
  return { statement, sent: () => sent, reply: (r: R) => reply(r), fail: (e: Error) => fail(e) };
}

describe('OwnWakes (PostgreSQL engine: same-process wakes of own commits)', () => {
  it('wakes once when the reply comes first and drops the echo', async () => {
    const { own, delivered, echo } = setup();
    const st = heldStatement<number>();
    const done = own.autocommit.run('c:q', st.statement, () => true);
    expect(st.sent()).toMatch(/^ts1\.\d+;c:q$/);
    expect(delivered).toEqual([]);
    st.reply(1);
    await done;
    expect(delivered).toEqual(['c:q']);
    expect(echo(st.sent())).toBe(false);
    expect(delivered).toEqual(['c:q']);
    expect(own.pending).toBe(0);
  });

  it('wakes once when the echo comes before the reply', async () => {
    const { own, delivered, echo } = setup();
    const st = heldStatement<number>();
    const done = own.autocommit.run('c:q', st.statement, () => true);
    expect(echo(st.sent())).toBe(true);
    st.reply(1);
    await done;
    expect(delivered).toEqual(['c:q']);
    expect(own.pending).toBe(0);
  });

  it('never wakes before the statement resolved, and not for one that did not notify', async () => {
    const { own, delivered, echo } = setup();
    const st = heldStatement<number>();
    const done = own.autocommit.run('c:q', st.statement, (r) => r > 0);
    await Promise.resolve();
    expect(delivered).toEqual([]);
    st.reply(0);
    await done;
    expect(delivered).toEqual([]);
    expect(own.pending).toBe(0);
    // A stray echo of that tag (it cannot come, but if it did) still wakes.
    expect(echo(st.sent())).toBe(true);
  });

  it('a failed statement wakes nothing itself; its echo, if it committed after all, still wakes', async () => {
    const { own, delivered, echo } = setup();
    const st = heldStatement<number>();
    const done = own.autocommit.run('c:q', st.statement, () => true);
    st.fail(new Error('connection lost'));
    await expect(done).rejects.toThrow('connection lost');
    expect(delivered).toEqual([]);
    expect(echo(st.sent())).toBe(true);
    expect(delivered).toEqual(['c:q']);
  });

  it('always wakes for another store’s tags, including one that extends this store’s tag', () => {
    const { own, echo } = setup();
    expect(echo('ts2.1;c:q')).toBe(true);
    expect(echo('ts1x.1;c:q')).toBe(true);
    expect(echo('ts1.999;c:q')).toBe(true);
    expect(own.pending).toBe(0);
  });

  it('without LISTEN it still wakes in-process and remembers nothing', async () => {
    const { own, delivered } = setup(false);
    await own.autocommit.run(
      'c:q',
      async () => 1,
      () => true,
    );
    expect(delivered).toEqual(['c:q']);
    expect(own.pending).toBe(0);
  });

  it('a transaction wakes only after commit(), once per payload, and never after abandon()', async () => {
    const { own, delivered, echo } = setup();
    const tx = own.forTransaction();
    const sent: string[] = [];
    const statement = async (w: string): Promise<number> => {
      sent.push(w);
      return 1;
    };
    await tx.run('c:a', statement, () => true);
    await tx.run('c:a', statement, () => true);
    await tx.run('c:b', statement, () => true);
    expect(sent[0]).toBe(sent[1]);
    expect(delivered).toEqual([]);
    tx.commit();
    expect(delivered).toEqual(['c:a', 'c:b']);
    expect(echo(sent[0]!)).toBe(false);
    expect(echo(sent[2]!)).toBe(false);
    expect(own.pending).toBe(0);

    const rolled = own.forTransaction();
    await rolled.run('c:a', statement, () => true);
    rolled.abandon();
    expect(delivered).toEqual(['c:a', 'c:b']);
    expect(own.pending).toBe(0);
  });
});
