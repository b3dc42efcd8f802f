// The ctxgate inspector (docs/inspector.md): a tenant's sessions and, for one session, what its last
// request showed the model and why. Plain DOM, no framework; every text from the API is set as text
// (textContent), never as markup. The key lives in this tab's sessionStorage and goes only in the
// Authorization header of the gateway's own API calls.
'use strict';

const keyName = 'ctxgate-inspector-key';
const pageSize = 20;
const api = '/v1';
const state = { offset: 0, search: '' };

const $ = (id) => document.getElementById(id);
const keyOf = () => sessionStorage.getItem(keyName);

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className !== undefined) node.className = className;
  return node;
}

function row(cells) {
  const tr = document.createElement('tr');
  for (const cell of cells) tr.append(cell instanceof Node ? wrap(cell) : element('td', cell));
  return tr;
}

function wrap(node) {
  const td = document.createElement('td');
  td.append(node);
  return td;
}

async function call(path, options = {}) {
  const response = await fetch(`${api}${path}`, {
    ...options,
    headers: { authorization: `Bearer ${keyOf()}`, ...(options.headers ?? {}) },
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body?.error?.message ?? `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

function show(view) {
  for (const id of ['sign-in-view', 'sessions-view', 'session-view', 'chain-view'])
    $(id).hidden = id !== view;
  $('sign-out').hidden = view === 'sign-in-view';
}

const time = (seconds) => new Date(seconds * 1000).toLocaleString();
const percent = (value) => (value === null || value === undefined ? '—' : `${Math.round(value * 100)}%`);

async function showSessions() {
  show('sessions-view');
  const query = new URLSearchParams({ offset: String(state.offset), limit: String(pageSize) });
  if (state.search !== '') query.set('search', state.search);
  const page = await call(`/sessions?${query}`);
  const body = $('sessions-table').querySelector('tbody');
  body.replaceChildren();
  for (const session of page.data) {
    const link = element('a', session.id);
    link.href = `#/session/${encodeURIComponent(session.id)}`;
    body.append(
      row([
        link,
        time(session.last_active_at),
        session.counts.active,
        session.counts.archived,
        session.tokens.active,
        session.summary ? 'yes' : 'no',
        percent(session.last_window_fill),
      ]),
    );
  }
  $('sessions-empty').hidden = page.data.length > 0;
  $('page-info').textContent =
    `${page.total === 0 ? 0 : state.offset + 1}–${state.offset + page.data.length} of ${page.total}`;
  $('previous-page').disabled = state.offset === 0;
  $('next-page').disabled = !page.has_more;

  const chains = await call('/responses/chains?limit=20');
  const chainRows = $('chains-table').querySelector('tbody');
  chainRows.replaceChildren();
  for (const chain of chains.data) {
    const link = element('a', chain.last_response_id);
    link.href = `#/chain/${encodeURIComponent(chain.last_response_id)}`;
    chainRows.append(row([link, chain.first_response_id, chain.responses, time(chain.updated_at)]));
  }
  $('chains-empty').hidden = chains.data.length > 0;
}

function outputText(response) {
  const parts = [];
  for (const item of response.output ?? []) {
    if (item.type === 'message')
      for (const part of item.content ?? []) if (typeof part.text === 'string') parts.push(part.text);
    if (item.type === 'function_call') parts.push(`${item.name}(${item.arguments})`);
  }
  return parts.join('\n');
}

async function showChain(id) {
  show('chain-view');
  $('chain-id').textContent = id;
  $('chain-error').hidden = true;
  const rows = $('chain-table').querySelector('tbody');
  rows.replaceChildren();
  // From the newest response back along previous_response_id, at most 50.
  let next = id;
  for (let count = 0; next && count < 50; count++) {
    let response;
    try {
      response = await call(`/responses/${encodeURIComponent(next)}`);
    } catch (error) {
      if (count === 0) {
        $('chain-error').textContent = error.message;
        $('chain-error').hidden = false;
      }
      return;
    }
    rows.append(
      row([
        response.id,
        time(response.created_at),
        response.status,
        response.usage?.input_tokens ?? '—',
        response.usage?.output_tokens ?? '—',
        element('span', outputText(response).slice(0, 2000), 'text'),
      ]),
    );
    next = response.previous_response_id;
  }
}

const regions = [
  ['system', 'System prompt', 'r-system'],
  ['summary', 'Summary and notes', 'r-summary'],
  ['tools', 'Tool definitions', 'r-tools'],
  ['history', 'History', 'r-history'],
  ['current', 'Current turn', 'r-current'],
];

function drawWindow(report) {
  const bar = $('window-bar');
  const legend = $('window-legend');
  bar.replaceChildren();
  legend.replaceChildren();
  if (report === undefined) {
    legend.append(element('li', 'No request recorded yet.'));
    return;
  }
  const parts = regions.map(([key, label, className]) => [label, report.regions[key] ?? 0, className]);
  parts.push(
    ['Output reserve', report.outputReserve, 'r-reserve'],
    ['Safety margin', report.safetyMargin, 'r-margin'],
  );
  const used = parts.reduce((sum, [, tokens]) => sum + tokens, 0);
  parts.push(['Free', Math.max(0, report.window - used), 'r-free']);
  bar.setAttribute('aria-label', `window of ${report.window} tokens`);
  for (const [label, tokens, className] of parts) {
    const piece = element('div', undefined, className);
    piece.style.width = `${(100 * tokens) / report.window}%`;
    piece.title = `${label}: ${tokens} tokens`;
    piece.dataset.region = label;
    piece.dataset.tokens = String(tokens);
    bar.append(piece);
    const item = element('li', `${label}: ${tokens}`, className.replace('r-', 'legend-'));
    item.style.setProperty('--swatch', getComputedStyle(piece).backgroundColor);
    legend.append(item);
  }
  legend.append(element('li', `Window: ${report.window}`));
}

function drawTimeline(reports) {
  const svg = $('timeline');
  svg.replaceChildren();
  const ordered = [...reports].reverse();
  if (ordered.length === 0) return;
  const step = ordered.length > 1 ? 580 / (ordered.length - 1) : 0;
  const points = ordered.map((report, index) => {
    const fill = Math.min(1.2, (report.inputTokens + report.outputReserve) / report.window);
    return [10 + index * step, 110 - fill * 90, report];
  });
  const ns = 'http://www.w3.org/2000/svg';
  const full = document.createElementNS(ns, 'line');
  for (const [name, value] of [
    ['x1', 10],
    ['x2', 590],
    ['y1', 20],
    ['y2', 20],
    ['stroke', '#b3261e'],
    ['stroke-dasharray', '4 4'],
  ])
    full.setAttribute(name, String(value));
  svg.append(full);
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' '));
  line.setAttribute('fill', 'none');
  line.setAttribute('stroke', '#2c6e49');
  line.setAttribute('stroke-width', '2');
  svg.append(line);
  for (const [x, y, report] of points) {
    const dot = document.createElementNS(ns, 'circle');
    dot.setAttribute('cx', x.toFixed(1));
    dot.setAttribute('cy', y.toFixed(1));
    dot.setAttribute('r', report.retries > 0 ? '4' : '2.5');
    dot.setAttribute('fill', report.retries > 0 ? '#b3261e' : '#2c6e49');
    dot.setAttribute('class', 'request-point');
    const title = document.createElementNS(ns, 'title');
    title.textContent = `${new Date(report.at).toLocaleTimeString()}: fill ${percent((report.inputTokens + report.outputReserve) / report.window)}, retries ${report.retries}`;
    dot.append(title);
    svg.append(dot);
  }
}

function cutOf(report) {
  const parts = [];
  if (report.dropped > 0) parts.push(`${report.dropped} dropped`);
  if (report.summarized > 0) parts.push(`${report.summarized} summarized`);
  if (report.masked > 0) parts.push(`${report.masked} masked`);
  if (report.truncated > 0) parts.push(`${report.truncated} truncated`);
  return parts.length === 0 ? 'nothing' : parts.join(', ');
}

function fateAt(report, position) {
  if (report === undefined) return undefined;
  for (const [first, count, fate] of report.fates)
    if (position >= first && position < first + count) return fate;
  return undefined;
}

function messageText(message) {
  if (typeof message.content === 'string') return message.content;
  if (Array.isArray(message.content))
    return message.content
      .map((part) => (typeof part?.text === 'string' ? part.text : `[${part?.type ?? 'part'}]`))
      .join('\n');
  if (Array.isArray(message.tool_calls))
    return message.tool_calls
      .map((call) => `${call.function?.name ?? ''}(${call.function?.arguments ?? ''})`)
      .join('\n');
  return '';
}

async function allHistory(id) {
  const messages = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await call(`/sessions/${encodeURIComponent(id)}/history?offset=${offset}&limit=1000`);
    messages.push(...page.data);
    if (!page.has_more || messages.length >= 20000) return messages;
  }
}

async function showSession(id) {
  show('session-view');
  $('session-id').textContent = id;
  $('session-error').hidden = true;
  $('session-body').hidden = true;
  let session;
  try {
    session = await call(`/sessions/${encodeURIComponent(id)}`);
  } catch (error) {
    $('session-error').textContent = error.message;
    $('session-error').hidden = false;
    return;
  }
  const [requests, history] = await Promise.all([
    call(`/sessions/${encodeURIComponent(id)}/requests`),
    allHistory(id),
  ]);
  const last = requests.data[0];
  $('session-body').hidden = false;
  drawWindow(last);

  if (session.summary === null) {
    $('summary-covers').textContent = 'No summary yet.';
    $('summary-text').textContent = '';
  } else {
    const covers = session.summary.covers;
    $('summary-covers').textContent =
      `Stands for messages ${covers.from_message}–${covers.to_message - 1} (${covers.messages} messages, ${covers.tokens} tokens) in ${session.summary.tokens} tokens.`;
    $('summary-text').textContent = session.summary.text;
  }

  drawTimeline(requests.data);
  const requestRows = $('requests-table').querySelector('tbody');
  requestRows.replaceChildren();
  for (const report of requests.data.slice(0, 50))
    requestRows.append(
      row([
        new Date(report.at).toLocaleString(),
        report.model,
        percent((report.inputTokens + report.outputReserve) / report.window),
        report.inputTokens,
        report.providerPromptTokens ?? '—',
        report.retries,
        report.fallback ?? '—',
        `${report.durationMs} ms`,
        cutOf(report),
      ]),
    );

  const counts = {};
  const messageRows = $('messages-table').querySelector('tbody');
  messageRows.replaceChildren();
  history.forEach((message, position) => {
    const fate = fateAt(last, position) ?? 'not yet sent';
    counts[fate] = (counts[fate] ?? 0) + 1;
    const text = element('td', messageText(message).slice(0, 2000), 'text');
    const tr = row([
      position,
      message.role,
      message.tokens,
      element('span', fate, `fate-${fate.replace(/ /g, '-')}`),
    ]);
    tr.dataset.position = String(position);
    tr.dataset.fate = fate;
    tr.append(text);
    messageRows.append(tr);
  });
  $('fate-counts').textContent = Object.entries(counts)
    .map(([fate, count]) => `${count} ${fate}`)
    .join(' · ');

  $('preview').textContent = last === undefined ? 'No request yet.' : 'Computing…';
  if (last !== undefined) {
    try {
      const preview = await call('/context/render', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': id },
        body: JSON.stringify({ model: last.model, messages: [{ role: 'user', content: '…' }] }),
      });
      const report = preview.report;
      $('preview').textContent =
        `A next turn would send ${preview.messages.length} messages, about ${report.inputTokens} tokens of a ${preview.window}-token window (${report.droppedMessages} left out, ${report.summarizedMessages} summarized, ${report.maskedToolResults} masked, ${report.truncatedToolResults} truncated).`;
    } catch (error) {
      $('preview').textContent = `Preview unavailable: ${error.message}`;
    }
  }
}

async function route() {
  if (keyOf() === null) {
    show('sign-in-view');
    return;
  }
  const match = /^#\/session\/(.+)$/.exec(location.hash);
  const chain = /^#\/chain\/(.+)$/.exec(location.hash);
  try {
    if (chain !== null) await showChain(decodeURIComponent(chain[1]));
    else if (match === null) await showSessions();
    else await showSession(decodeURIComponent(match[1]));
  } catch (error) {
    if (error.status === 401) {
      sessionStorage.removeItem(keyName);
      show('sign-in-view');
      $('sign-in-error').textContent = 'That key was not accepted.';
      $('sign-in-error').hidden = false;
    } else throw error;
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('sign-in-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(keyName, $('api-key').value.trim());
    $('api-key').value = '';
    $('sign-in-error').hidden = true;
    void route();
  });
  $('sign-out').addEventListener('click', () => {
    sessionStorage.removeItem(keyName);
    location.hash = '#/';
    void route();
  });
  $('search-form').addEventListener('submit', (event) => {
    event.preventDefault();
    state.search = $('search').value.trim();
    state.offset = 0;
    void route();
  });
  $('previous-page').addEventListener('click', () => {
    state.offset = Math.max(0, state.offset - pageSize);
    void route();
  });
  $('next-page').addEventListener('click', () => {
    state.offset += pageSize;
    void route();
  });
  window.addEventListener('hashchange', () => void route());
  void route();
});
