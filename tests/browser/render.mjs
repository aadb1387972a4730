// Open a page in the system's headless Chromium (Playwright's driver, no browser download), wait for
// it to finish drawing, count the marks of every chart, collect console errors and failed requests,
// keep a screenshot, and print one JSON document on stdout.
//
//   node render.mjs PAGE SCREENSHOT PROFILE_DIR
//
// PAGE is a local HTML file. Every request that is not file:// is refused (the machine has no network,
// and the pages under test must not need one). A page that sets `window.chartsPending` is waited for
// until `window.chartsDone` is true (the Mermaid page); the charts are the elements matching `figure`.
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [page_, screenshot, profile] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1400, height: 1000 },
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const errors = [];
const blocked = [];
try {
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith("file:")) return route.continue();
    blocked.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on("console", (msg) => {
    if (msg.type() === "error") errors.push(msg.text());
  });
  page.on("pageerror", (err) => errors.push(String(err)));
  page.on("requestfailed", (req) => {
    if (req.url().startsWith("file:")) errors.push(`failed to load ${req.url()}`);
  });
  await page.goto(pathToFileURL(page_).href, { waitUntil: "load" });
  await page.waitForFunction(() => !window.chartsPending || window.chartsDone === true, null, {
    timeout: 60000,
  });
  const charts = await page.$$eval("figure", (figures) =>
    figures.map((f) => ({
      data: Object.assign({}, f.dataset),
      svg: f.querySelectorAll("svg").length,
      rects: f.querySelectorAll("g.mark-rect.role-mark path").length,
      rules: f.querySelectorAll("g.mark-rule.role-mark line").length,
      slices: f.querySelectorAll("path.pieCircle").length,
      legend: Array.from(f.querySelectorAll("g.role-legend-label text")).map((t) => t.textContent),
      swatches: Array.from(f.querySelectorAll("g.role-legend-symbol path")).map(
        (s) => getComputedStyle(s).fill,
      ),
      width: Math.round(f.getBoundingClientRect().width),
      height: Math.round(f.getBoundingClientRect().height),
    })),
  );
  await page.screenshot({ path: screenshot, fullPage: true });
  process.stdout.write(JSON.stringify({ charts, errors, blocked }) + "\n");
} finally {
  await context.close();
}
