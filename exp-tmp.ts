import { runProgram } from './tools/code-mode/sandbox';
(async () => {
  const callTool = async ({ index, name, args }: any) => {
    if (name === 'fail') return { ok: false as const, message: 'nope ' + index };
    return { ok: true as const, value: { index, name, args } };
  };
  const base = { toolNames: ['echo', 'fail'], seed: 'wf/call-1', now: Date.UTC(2024, 0, 2), callTool, limits: { cpuMs: 1000 } };
  for (const code of [
    'return 1 + 1',
    'console.log("hi", {a: 1}, [1,2]); const r = await tools.echo({x: 1}); return r',
    'try { await tools.fail({}) } catch (e) { return "caught: " + e.message }',
    'return [Math.random(), Math.random(), Date.now(), new Date().toISOString()]',
    'for(;;){}',
    'const a=[]; for(;;) a.push(new Array(1e5).fill(1))',
    'const f = n => f(n+1)+1; return f(0)',
    'return this.constructor.constructor("return process")()',
    'return await import("fs")',
    'return require("fs")',
    'const s = "x".repeat(1<<20); for (let i=0;i<50;i++) console.log(s)',
    'try { await tools.echo({f: () => 1}) } catch (e) { return e.message }',
    'try { await tools.echo({n: 10n}) } catch (e) { return e.message }',
    'const a = {}; a.self = a; try { await tools.echo(a) } catch (e) { return e.message }',
    'return new Promise(() => {})',
    'const r = await Promise.all([tools.echo({a:1}), tools.echo({b:2})]); return r.map(x => x.index)',
    'return new Date(0)',
    'const x = ;',
    'throw new TypeError("bad thing")',
    'null.x',
    'return typeof tools.run_code + Object.keys(tools)',
  ]) {
    const t = Date.now();
    const out = await runProgram({ ...base, code });
    console.log((Date.now() - t) + 'ms', JSON.stringify(code).slice(0, 50), '=>', JSON.stringify({ ...out, logs: out.logs.map(l => l.slice(0, 40)) }).slice(0, 400));
  }
})();
