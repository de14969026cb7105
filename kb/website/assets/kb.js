// kb site enhancements. Every page reads without this script; with it, the search page searches and
// listing pages filter their rows. No inline script, no request beyond this site's own files.
const PAGE = 20; // search results shown at a time
// Ranked as kb search ranks: bm25 with FTS5's constants (k1 1.2, b 0.75) over the same weighted columns; a longer
// word a query word starts (output for out) adds next to nothing, and metadata (the title, also in the text) no
// boost of its own.
const RANKING = {
  termSaturation: 1.2,
  pageLength: 0.75,
  termSimilarity: 5,
  metaWeights: { title: 0, status: 0, backend: 0, reported: 0 },
};
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
  const { backend, status, reported } = data.meta;
  const [recorded] = data.filters.recorded || [];
  const [summary] = data.filters.summary || [];
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

// What kb search finds for plain words and quoted phrases (kb/index/fulltext.py), asked of Pagefind. Pagefind
// matches a word as the start of longer ones (out: output) and ranks a quoted phrase not at all, so each word or
// phrase is looked up whole ("out", with Pagefind's stemming, as FTS5 stems), the entries holding all of them are
// kept, and they are ranked by Pagefind's bm25 over the words. Two adjacent plain words also match them written
// together (compiletimeout, a failure class as one word), adding that word's score, as kb search does.
const WORD = /[\p{L}\p{N}]+/gu; // where FTS5 splits words: at anything that is not a letter or digit

function parseQuery(text, stopWords) {
  const phrases = [];
  const bare = [];
  const rest = text.replace(/"([^"]*)"?/g, (_, phrase) => {
    phrases.push(phrase.toLowerCase().match(WORD) || []);
    return " ";
  });
  const terms = phrases.filter((parts) => parts.length).map((parts) => parts.join(" "));
  const termOf = new Map(); // a bare word's term, for the words a joined word stands for
  for (const word of new Set(rest.split(/\s+/).filter(Boolean))) {
    bare.push(word);
    const parts = stopWords.has(word.toLowerCase()) ? [] : word.toLowerCase().match(WORD) || [];
    if (parts.length) termOf.set(word, terms.push(parts.join(" ")) - 1);
  }
  const alone = (word) => /^[\p{L}\p{N}]+$/u.test(word);
  // Two adjacent words written together (compiletimeout), standing for those two terms only, as kb search has it.
  const joined = new Map();
  if (!phrases.length) {
    bare.slice(1).forEach((word, at) => {
      if (alone(word) && alone(bare[at])) {
        joined.set(`${bare[at]}${word}`.toLowerCase(), [termOf.get(bare[at]), termOf.get(word)]);
      }
    });
  }
  return { terms, joined: [...joined].map(([word, covers]) => ({ word, covers })) };
}

async function searchLikeKb(pagefind, text, filters, stopWords) {
  const { terms, joined } = parseQuery(text, stopWords);
  if (!terms.length) return []; // only stop words: kb search finds nothing either
  const ids = async (term) => new Set((await pagefind.search(`"${term}"`, { filters })).results.map((r) => r.id));
  // The exact lookups first: they are cheap, and a ranked search is only worth it where they found something.
  const [whole, everyJoined] = await Promise.all([
    Promise.all(terms.map(ids)), Promise.all(joined.map(({ word }) => ids(word))),
  ]);
  // An entry holding a joined word must hold every other term too: a third word still narrows.
  const withOthers = everyJoined.map((set, at) => new Set([...set].filter((id) =>
    whole.every((other, term) => joined[at].covers.includes(term) || other.has(id)))));
  const together = withOthers.filter((set) => set.size);
  const words = joined.filter((_, at) => withOthers[at].size).map(({ word }) => word);
  const all = whole.every((set) => set.size);
  if (!all && !together.length) return [];
  const [ranked, ...rankedTogether] = await Promise.all([
    all ? pagefind.search(terms.join(" "), { filters }) : { results: [] },
    ...words.map((word) => pagefind.search(word, { filters })),
  ]);
  const found = new Map();
  for (const result of ranked.results) {
    if (whole.every((set) => set.has(result.id))) found.set(result.id, { result, score: result.score });
  }
  together.forEach((set, at) => {
    for (const result of rankedTogether[at].results) {
      if (!set.has(result.id)) continue;
      const hit = found.get(result.id) || found.set(result.id, { result, score: 0 }).get(result.id);
      hit.score += result.score;
    }
  });
  return [...found.values()].sort((a, b) => b.score - a.score).map((hit) => hit.result);
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
  const stopWords = new Set(names(box.dataset.stopWords));
  if (!bundles.length) {
    status.textContent = "Nothing to search yet: the knowledge base has no entries.";
    return;
  }
  status.textContent = "Loading the search index…";
  const base = new URL("pagefind/", root);
  const pagefind = await import(new URL(`${bundles[0]}/pagefind.js`, base).href);
  await pagefind.options({ baseUrl: root.pathname, ranking: RANKING });
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
    const found = query
      ? await searchLikeKb(pagefind, query, filters, stopWords)
      : (await pagefind.search(null, { filters })).results;
    if (ticket !== latest) return; // a newer query has started
    results.replaceChildren();
    shown = 0;
    const seen = new Set(stale); // a page unchanged for search can be in two bundles: show it once
    current = found.filter((result) => !seen.has(result.id) && seen.add(result.id));
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
