// kb site enhancements. Every page reads without this script; with it, the search page searches and
// listing pages filter their rows. No inline script, no request beyond this site's own files.
const PAGE = 20; // search results shown at a time
const root = new URL(document.body.dataset.root || "./", location.href);

function filterRows() {
  const box = document.querySelector(".row-filter");
  const table = document.querySelector("table.entries");
  if (!box || !table) return;
  box.hidden = false;
  const input = box.querySelector("input");
  input.addEventListener("input", () => {
    const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    for (const row of table.tBodies[0].rows) {
      const text = row.textContent.toLowerCase();
      row.hidden = !words.every((word) => text.includes(word));
    }
  });
}

// Pagefind's excerpts are HTML with <mark> around the hits: keep only text and <mark>, whatever else is in it.
function safeExcerpt(html) {
  const fragment = document.createDocumentFragment();
  const parsed = new DOMParser().parseFromString(`<p>${html}</p>`, "text/html");
  for (const node of parsed.body.firstChild.childNodes) {
    if (node.nodeName === "MARK") {
      const mark = document.createElement("mark");
      mark.textContent = node.textContent;
      fragment.append(mark);
    } else {
      fragment.append(document.createTextNode(node.textContent));
    }
  }
  return fragment;
}

function resultItem(data) {
  const item = document.createElement("li");
  const link = document.createElement("a");
  link.href = data.url;
  link.textContent = data.meta.title || data.url;
  const facts = document.createElement("span");
  facts.className = "note";
  const { backend, status, recorded, reported, summary } = data.meta;
  facts.textContent = ` ${[backend, status, recorded].filter(Boolean).join(" · ")}`;
  item.append(link, facts);
  if (reported) {
    const badge = document.createElement("span");
    badge.className = "badge reported";
    badge.textContent = "reported by others, not measured here";
    item.append(" ", badge);
  }
  // The entry's headline with its labels (compile 7.4 s · steady step 34.7 ms), then the words around the hits.
  if (summary) {
    const line = document.createElement("div");
    line.className = "summary";
    line.textContent = summary;
    item.append(line);
  }
  const excerpt = document.createElement("div");
  excerpt.className = "excerpt";
  excerpt.append(safeExcerpt(data.excerpt || ""));
  item.append(excerpt);
  return item;
}

async function startSearch(box) {
  const status = document.getElementById("search-status");
  const input = document.getElementById("search-input");
  const results = document.getElementById("search-results");
  const selects = [...box.querySelectorAll("select[data-filter]")];
  const params = new URLSearchParams(location.search);
  input.value = params.get("q") || "";
  for (const select of selects) select.value = params.get(select.name) || "";
  if (location.protocol === "file:") {
    status.textContent = "Search needs the site served over HTTP (browsers do not let pages opened from a folder " +
      "load the search index). Run `kb site serve`, or put the folder on any static host. The entry lists " +
      "filter without search.";
    return;
  }
  const names = (text) => (text || "").split(" ").filter(Boolean);
  const bundles = names(box.dataset.bundles);
  // Results from a sealed bundle for pages that changed since: their new text is in the recent bundle.
  const stale = new Set(names(box.dataset.stale));
  if (!bundles.length) {
    status.textContent = "Nothing to search yet: the knowledge base has no entries.";
    return;
  }
  status.textContent = "Loading the search index…";
  const base = new URL("pagefind/", root);
  const pagefind = await import(new URL(`${bundles[0]}/pagefind.js`, base).href);
  // Ranked as kb search ranks: bm25 with FTS5's constants (k1 1.2, b 0.75) over the same weighted columns.
  await pagefind.options({ baseUrl: root.pathname, ranking: { termSaturation: 1.2, pageLength: 0.75 } });
  for (const bundle of bundles.slice(1)) {
    await pagefind.mergeIndex(new URL(`${bundle}/`, base).href, { baseUrl: root.pathname });
  }
  let latest = 0;
  async function run() {
    const ticket = ++latest;
    const filters = {};
    for (const select of selects) if (select.value) filters[select.dataset.filter] = select.value;
    const query = input.value.trim();
    const state = new URLSearchParams();
    if (query) state.set("q", query);
    for (const [name, value] of Object.entries(filters)) state.set(name, value);
    history.replaceState(null, "", `${location.pathname}${state.size ? "?" + state : ""}`);
    if (!query && !Object.keys(filters).length) {
      results.replaceChildren();
      current = [];
      more.hidden = true;
      status.textContent = "Type words, or pick filters.";
      return;
    }
    const found = await pagefind.search(query || null, { filters });
    if (ticket !== latest) return; // a newer query has started
    results.replaceChildren();
    shown = 0;
    const seen = new Set(stale); // a page unchanged for search can be in two bundles: show it once
    current = found.results.filter((result) => !seen.has(result.id) && seen.add(result.id));
    await showMore(ticket);
  }
  // Each result's excerpt is a fetch of its own: load a page of them at a time, more on request.
  let current = [];
  let shown = 0;
  const more = document.getElementById("search-more");
  async function showMore(ticket = latest) {
    const batch = await Promise.all(current.slice(shown, shown + PAGE).map((result) => result.data()));
    if (ticket !== latest) return;
    results.append(...batch.map(resultItem));
    shown += batch.length;
    more.hidden = shown >= current.length;
    const count = `${current.length} entr${current.length === 1 ? "y" : "ies"}`;
    status.textContent = shown < current.length ? `${count}; the first ${shown} shown.` : `${count}.`;
  }
  more.addEventListener("click", () => showMore());
  let timer;
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 150); });
  for (const select of selects) select.addEventListener("change", run);
  box.querySelector("form").addEventListener("submit", (event) => { event.preventDefault(); run(); });
  await run();
}

filterRows();
const searchBox = document.getElementById("search");
if (searchBox) {
  startSearch(searchBox).catch((error) => {
    document.getElementById("search-status").textContent = `Search could not start: ${error.message}`;
  });
}
