// The JavaScript that runs inside the sandbox before the program: it builds the program's world
// (`tools`, `console`, a seeded Math.random, a frozen clock) and turns the program's code into an
// async function without pasting it into any source text. Everything the host receives from the
// guest passes through `tag`, which describes a value faithfully (functions, BigInt, undefined,
// NaN, -0, holes, class instances, accessors, cycles included) so the host can judge it with
// snapshotJson instead of a lossy JSON.stringify.
//
// The prelude evaluates to a function of (host, names, seed, now, code) that returns the program's
// promise; that promise resolves to the tagged form of the program's return value, as JSON text.

export const GUEST_PRELUDE = String.raw`(function (host, names, seed, now, code) {
  'use strict';
  var g = globalThis;
  var isArray = Array.isArray, getProto = Object.getPrototypeOf, ownKeys = Reflect.ownKeys;
  var getDesc = Object.getOwnPropertyDescriptor, defineProperty = Object.defineProperty, freeze = Object.freeze;
  var objectProto = Object.prototype, stringify = JSON.stringify, parse = JSON.parse, numberIsFinite = Number.isFinite;
  var ErrorCtor = Error, StringCtor = String, imul = Math.imul, PromiseCtor = Promise, hostCall = host.call, hostLog = host.log;

  function tag(v, ancestors) {
    switch (typeof v) {
      case 'string': case 'boolean': return ['j', v];
      case 'number':
        if (!numberIsFinite(v)) return ['x', 'number', StringCtor(v)];
        if (v === 0 && 1 / v < 0) return ['x', 'number', '-0'];
        return ['j', v];
      case 'undefined': return ['x', 'undefined'];
      case 'function': return ['x', 'function'];
      case 'symbol': return ['x', 'symbol'];
      case 'bigint': return ['x', 'bigint', StringCtor(v)];
    }
    if (v === null) return ['j', null];
    for (var d = 0; d < ancestors.length; d++) if (ancestors[d] === v) return ['x', 'cycle', d];
    ancestors[ancestors.length] = v;
    var keys = ownKeys(v), out, i, k, desc;
    if (isArray(v)) {
      var items = [], extra = false;
      for (i = 0; i < v.length; i++) {
        desc = getDesc(v, StringCtor(i));
        items[i] = !desc ? ['x', 'hole'] : 'value' in desc ? tag(desc.value, ancestors) : ['x', 'accessor'];
      }
      for (i = 0; i < keys.length; i++) {
        k = keys[i];
        if (k !== 'length' && !(typeof k === 'string' && StringCtor(k >>> 0) === k && (k >>> 0) < v.length)) extra = true;
      }
      out = ['a', items, extra];
    } else {
      var proto = getProto(v), kind = proto === objectProto ? 'plain' : proto === null ? 'null' : 'class';
      var ctorName = kind === 'class' ? (proto.constructor && proto.constructor.name) || 'an unnamed class' : '';
      var entries = [], symbols = 0;
      for (i = 0; i < keys.length; i++) {
        k = keys[i];
        if (typeof k === 'symbol') { symbols++; continue; }
        desc = getDesc(v, k);
        entries[entries.length] = [k, 'value' in desc ? tag(desc.value, ancestors) : ['x', 'accessor']];
      }
      out = ['o', kind, ctorName, entries, symbols];
    }
    ancestors.length = ancestors.length - 1;
    return out;
  }

  function show(v) {
    if (typeof v === 'string') return v;
    if (v instanceof ErrorCtor) return v.name + ': ' + v.message;
    try { var s = stringify(v); if (s !== undefined) return s; } catch (e) {}
    return StringCtor(v);
  }
  function logger(level) {
    return function () {
      var parts = [];
      for (var i = 0; i < arguments.length; i++) parts[i] = show(arguments[i]);
      hostLog(level, parts.join(' '));
    };
  }
  var consoleObject = freeze({ log: logger('log'), info: logger('info'), warn: logger('warn'), error: logger('error'), debug: logger('debug') });

  var tools = Object.create(null);
  names.forEach(function (name) {
    tools[name] = function (args) {
      var described;
      try {
        described = stringify(tag(args === undefined ? {} : args, []));
      } catch (e) {
        return PromiseCtor.reject(e);
      }
      return hostCall(name, described).then(parse);
    };
  });
  defineProperty(g, 'tools', { value: freeze(tools), enumerable: false });
  defineProperty(g, 'console', { value: consoleObject, enumerable: false });

  // An honest program replays identically after a crash: randomness is seeded by the call, and the
  // clock stands still at the moment the run_code call was first scheduled.
  var state = seed >>> 0;
  Math.random = function random() {
    state = (state + 0x6d2b79f5) | 0;
    var t = imul(state ^ (state >>> 15), state | 1);
    t ^= t + imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  var RealDate = Date;
  var FixedDate = function Date() {
    if (!new.target) return new RealDate(now).toString();
    if (arguments.length === 0) return new RealDate(now);
    return new RealDate(...arguments);
  };
  FixedDate.prototype = RealDate.prototype;
  FixedDate.now = function now_() { return now; };
  FixedDate.parse = RealDate.parse;
  FixedDate.UTC = RealDate.UTC;
  defineProperty(RealDate.prototype, 'constructor', { value: FixedDate, writable: true, configurable: true });
  g.Date = FixedDate;

  var AsyncFunction = (async function () {}).constructor;
  var program = new AsyncFunction(code);
  return program().then(function (result) { return stringify(tag(result, [])); });
})`;
