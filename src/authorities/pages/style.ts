// The /authority pages' style sheet (served at /authority/app.css): one column, readable on a
// phone, AA contrast, the colours of the /verify page.
export const CSS = `
:root { --ink: #1b1f24; --muted: #4a5360; --line: #d5dae1; --paper: #fff; --bg: #f3f5f8; --brand: #0b4f8a;
  --good: #0f6b3a; --good-bg: #e6f4ec; --bad: #a3141b; --bad-bg: #fbeaea; --wait: #7a4b00; --wait-bg: #fff4de;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: var(--bg); line-height: 1.5; }
* { box-sizing: border-box; }
body { margin: 0; }
.wrap { max-width: 900px; margin: 0 auto; padding: 0 16px 24px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--paper); padding: 8px 12px; z-index: 10; }
.skip:focus { left: 8px; }
.top { background: var(--brand); color: #fff; }
.top .wrap { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 8px 16px; min-height: 56px; padding-bottom: 0; }
.brand { margin: 8px 0; font-weight: 700; }
.brand .area { font-weight: 400; }
.tools { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; margin: 8px 0; }
.tools a, .tools .who { color: #fff; }
.logout { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 0; }
button.link { background: transparent; color: #fff; border: 1px solid rgba(255,255,255,.7); border-radius: 6px; padding: 6px 12px; font: inherit; cursor: pointer; min-height: 36px; }
h1 { font-size: 1.6rem; margin: 24px 0 8px; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 0 0 10px; }
.lead { color: var(--muted); margin: 0 0 16px; }
.muted { color: var(--muted); }
.card { background: var(--paper); border: 1px solid var(--line); border-radius: 10px; padding: 18px; margin: 0 0 18px; }
.card.attention { border: 2px solid var(--wait); }
.field { margin: 0 0 14px; border: 0; padding: 0; }
legend, label { display: block; font-weight: 600; margin: 0 0 6px; }
label.choice { font-weight: 400; display: inline-flex; gap: 6px; align-items: center; margin-right: 16px; }
input { font: inherit; font-size: 1rem; padding: 10px 12px; border: 1px solid #8a94a3; border-radius: 6px; background: #fff; color: var(--ink); width: 100%; }
input[type=radio] { width: auto; }
input[type=file] { padding: 8px; }
input:focus, button:focus, a:focus { outline: 3px solid #f0b429; outline-offset: 2px; }
.button, button.primary, button.secondary { display: inline-block; font: inherit; font-weight: 600; border-radius: 6px; padding: 12px 20px; cursor: pointer; min-height: 44px; text-decoration: none; }
.button.primary, button.primary { background: var(--brand); color: #fff; border: 0; }
button.primary.danger { background: var(--bad); }
button.secondary { background: #fff; color: var(--brand); border: 2px solid var(--brand); }
.buttons { display: flex; flex-wrap: wrap; gap: 10px; }
.banner { border-radius: 8px; padding: 10px 14px; margin: 0 0 14px; font-weight: 600; }
.banner.good { background: var(--good-bg); color: var(--good); border: 1px solid var(--good); }
.banner.bad { background: var(--bad-bg); color: var(--bad); border: 1px solid var(--bad); }
.banner.wait { background: var(--wait-bg); color: var(--wait); border: 1px solid var(--wait); }
.list { list-style: none; margin: 0 0 18px; padding: 0; }
.item { background: var(--paper); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; margin: 0 0 10px; }
.item .title { font-weight: 700; font-size: 1.05rem; margin-right: 8px; }
.status, .due, .pending { display: inline-block; border-radius: 999px; padding: 2px 10px; font-size: .9rem; font-weight: 600; margin: 4px 6px 0 0; }
.status.good { background: var(--good-bg); color: var(--good); }
.status.bad, .due.bad { background: var(--bad-bg); color: var(--bad); }
.status.wait, .due.wait, .pending { background: var(--wait-bg); color: var(--wait); }
.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(180px, 1fr)); gap: 8px 16px; margin: 10px 0 0; }
.facts dt { color: var(--muted); font-size: .9rem; }
.facts dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.history { margin: 0; padding-left: 0; list-style: none; }
.history li { padding: 8px 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; }
.docs { margin: 0; padding-left: 18px; overflow-wrap: anywhere; }
.hash { font-size: .8rem; word-break: break-all; }
.consent.PENDING { color: var(--wait); font-weight: 600; }
.filters { display: flex; flex-wrap: wrap; gap: 6px 14px; margin: 0 0 14px; }
.filters a[aria-current="page"] { font-weight: 700; color: var(--ink); text-decoration: none; }
.pager { display: flex; gap: 16px; align-items: center; margin: 0 0 18px; }
`;
