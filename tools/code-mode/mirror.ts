// Rebuilds a value the guest described (see guest-prelude.ts `tag`) as a host value with the same
// flaws: a function stays a function, a cycle stays a cycle, a class instance stays an instance.
// snapshotJson then judges the mirror, so a program's arguments and result follow exactly the
// lossless-JSON rules of every other recorded value, with the same messages.

export type Tagged =
  | ['j', string | number | boolean | null]
  | ['x', string, (string | number)?]
  | ['a', Tagged[], boolean]
  | ['o', 'plain' | 'null' | 'class', string, [string, Tagged][], number];

export function mirror(node: Tagged, ancestors: object[] = []): unknown {
  switch (node[0]) {
    case 'j':
      return node[1];
    case 'x':
      return special(node[1], node[2], ancestors);
    case 'a': {
      const out: unknown[] = [];
      ancestors.push(out);
      node[1].forEach((item, i) => {
        if (item[0] === 'x' && item[1] === 'hole') out.length = i + 1;
        else if (item[0] === 'x' && item[1] === 'accessor')
          Object.defineProperty(out, i, { get: () => undefined, enumerable: true, configurable: true });
        else out[i] = mirror(item, ancestors);
      });
      if (node[2]) (out as unknown as { extra: boolean }).extra = true;
      ancestors.pop();
      return out;
    }
    case 'o': {
      const [, kind, ctorName, entries, symbols] = node;
      const out: Record<string | symbol, unknown> =
        kind === 'plain' ? {} : kind === 'null' ? Object.create(null) : Object.create(namedClass(ctorName).prototype);
      ancestors.push(out);
      for (const [key, value] of entries) {
        if (value[0] === 'x' && value[1] === 'accessor')
          Object.defineProperty(out, key, { get: () => undefined, enumerable: true, configurable: true });
        else out[key] = mirror(value, ancestors);
      }
      for (let i = 0; i < symbols; i++) out[Symbol(`guest symbol ${i}`)] = true;
      ancestors.pop();
      return out;
    }
    default:
      throw new Error(`malformed value description from the sandbox: ${JSON.stringify(node).slice(0, 80)}`);
  }
}

function special(kind: string, detail: string | number | undefined, ancestors: object[]): unknown {
  switch (kind) {
    case 'undefined':
      return undefined;
    case 'function':
      return () => undefined;
    case 'symbol':
      return Symbol('guest symbol');
    case 'bigint':
      return BigInt(String(detail));
    case 'number':
      return detail === '-0' ? -0 : Number(detail);
    case 'cycle':
      return ancestors[Number(detail)];
    default:
      throw new Error(`malformed value description from the sandbox: ${kind}`);
  }
}

function namedClass(name: string): { prototype: object } {
  // A fresh class whose name is the guest constructor's, for snapshotJson's "an instance of X".
  return { [name]: class {} }[name];
}
