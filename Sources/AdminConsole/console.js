// TextGateway operator console. Plain browser JavaScript with no framework or chart library:
// the page is served under a strict CSP (script-src 'self', nothing external) and nothing may
// be fetched from elsewhere, so the charts below are drawn as SVG by this file itself.
'use strict';

(function () {
  const TOKEN_KEY = 'tg-admin-token';       // sessionStorage: gone when the tab closes
  const LANG_KEY = 'tg-console-lang';       // localStorage: the operator's language choice
  const REFRESH_MS = 30000;
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const STRINGS = {
    en: {
      title: 'TextGateway console', language: 'Language', range: 'Range',
      rangeToday: 'Today', range7d: '7 days', range30d: '30 days', refresh: 'Refresh', logout: 'Log out',
      loginTitle: 'Sign in', loginLabel: 'Admin token', loginSubmit: 'Sign in',
      loginWrong: 'The token was refused.', loginExpired: 'The token was refused; sign in again.',
      loginDisabled: 'The admin console is not enabled on this gateway.',
      networkError: 'The gateway could not be reached.', loading: 'Loading…',
      updated: 'Updated {time}', storeUnavailable: 'The store is unavailable.', failed: 'Could not load: {detail}',
      totals: 'Totals', requests: 'Requests', inputTokens: 'Input tokens', outputTokens: 'Output tokens',
      cacheHits: 'Cache hits', errorRate: 'Error rate', addedP50: 'Added latency p50', addedP95: 'Added latency p95',
      upstreamP50: 'Upstream latency p50', upstreamP95: 'Upstream latency p95', ms: '{n} ms',
      daily: 'Per day', requestsByTask: 'Requests by task', tokensPerDay: 'Tokens per day',
      errorsByCode: 'Errors by code', exportCsv: 'Export CSV', noData: 'No data in this range.',
      noTask: '(no task)', tokens: 'Tokens', errors: 'Errors', day: 'Day',
      callers: 'Callers', searchCallers: 'Search user, label or plan', user: 'User', label: 'Label', kind: 'Kind',
      plan: 'Plan', quotaToday: 'Quota used today', lastSeen: 'Last seen', guests: '(guests)',
      kind_token: 'token', kind_jwt: 'JWT', kind_device: 'device', kind_guest: 'guest', noQuota: 'no quota',
      upstreams: 'Upstreams', name: 'Name', model: 'Model', state: 'State', answers: 'Answers', failures: 'Failures',
      state_in_use: 'in use', state_cooling_down: 'cooling down', state_probing: 'probing',
      jobs: 'Jobs', id: 'ID', task: 'Task', status: 'Status', progress: 'Progress', created: 'Created',
      job_queued: 'queued', job_running: 'running', job_succeeded: 'succeeded', job_failed: 'failed',
      job_cancelled: 'cancelled', job_pendingItems: 'pending parts', noJobs: 'No job is running.',
      recentFailures: 'Recent failures', requestId: 'Request ID', time: 'Time', statusCode: 'Status', code: 'Code',
      route: 'Route', upstream: 'Upstream', noFailures: 'No failures.',
      callerTokens: 'Caller tokens', userId: 'User ID', labelOptional: 'Label (optional)', createToken: 'Create token',
      secretWarning: 'Copy this token now: it is shown only once and cannot be shown again.',
      copy: 'Copy', copied: 'Copied', dismiss: 'Done', lastUsed: 'Last used', revoked: 'Revoked', revoke: 'Revoke',
      revokeConfirm: 'Revoke token {id} of {user}? Apps using it stop working at once.',
      tokenCreated: 'Token created.', tokenRevoked: 'Token revoked.', refused: 'Refused: {detail}',
      noTokens: 'No tokens.', noCallers: 'No callers in this range.', exported: 'Downloaded {file}',
      task_summarize: 'summarize', task_rewrite: 'rewrite', 'task_key-points': 'key points', task_titles: 'titles',
      cost: 'Cost', costPerDay: 'Cost per day', noPrices: 'no prices', budgets: 'Budgets', scope: 'Scope',
      period: 'Period', used: 'Used', held: 'Held', limit: 'Limit', share: 'Share', resets: 'Resets',
      scope_caller: 'caller', scope_guests: 'all guests', scope_devices: 'all devices', scope_gateway: 'whole gateway',
      period_day: 'a day', period_month: 'a month', noBudgets: 'No shared budget is set.', models: 'Models',
      noModels: 'No model answered in this range.', noModel: '(none)', tokensUnit: '{n} tokens',
    },
    fa: {
      title: 'کنسول TextGateway', language: 'زبان', range: 'بازه',
      rangeToday: 'امروز', range7d: '۷ روز', range30d: '۳۰ روز', refresh: 'تازه‌سازی', logout: 'خروج',
      loginTitle: 'ورود', loginLabel: 'توکن مدیر', loginSubmit: 'ورود',
      loginWrong: 'توکن پذیرفته نشد.', loginExpired: 'توکن پذیرفته نشد؛ دوباره وارد شوید.',
      loginDisabled: 'کنسول مدیر روی این درگاه فعال نیست.',
      networkError: 'دسترسی به درگاه ممکن نشد.', loading: 'در حال بارگیری…',
      updated: 'به‌روز شده در {time}', storeUnavailable: 'پایگاه داده در دسترس نیست.', failed: 'بارگیری نشد: {detail}',
      totals: 'جمع کل', requests: 'درخواست‌ها', inputTokens: 'توکن‌های ورودی', outputTokens: 'توکن‌های خروجی',
      cacheHits: 'پاسخ از حافظهٔ نهان', errorRate: 'نرخ خطا', addedP50: 'تأخیر افزوده p50', addedP95: 'تأخیر افزوده p95',
      upstreamP50: 'تأخیر سرویس بالادست p50', upstreamP95: 'تأخیر سرویس بالادست p95', ms: '{n} میلی‌ثانیه',
      daily: 'روزانه', requestsByTask: 'درخواست‌ها به تفکیک کار', tokensPerDay: 'توکن‌ها در روز',
      errorsByCode: 'خطاها به تفکیک کد', exportCsv: 'خروجی CSV', noData: 'در این بازه داده‌ای نیست.',
      noTask: '(بدون کار)', tokens: 'توکن‌ها', errors: 'خطاها', day: 'روز',
      callers: 'فراخوان‌ها', searchCallers: 'جستجوی کاربر، برچسب یا طرح', user: 'کاربر', label: 'برچسب', kind: 'نوع',
      plan: 'طرح', quotaToday: 'سهمیهٔ مصرف‌شدهٔ امروز', lastSeen: 'آخرین بار', guests: '(مهمان‌ها)',
      kind_token: 'توکن', kind_jwt: 'JWT', kind_device: 'دستگاه', kind_guest: 'مهمان', noQuota: 'بی‌سهمیه',
      upstreams: 'سرویس‌های بالادست', name: 'نام', model: 'مدل', state: 'وضعیت', answers: 'پاسخ‌ها', failures: 'خطاها',
      state_in_use: 'در حال استفاده', state_cooling_down: 'در حال استراحت', state_probing: 'در حال آزمون',
      jobs: 'کارهای طولانی', id: 'شناسه', task: 'کار', status: 'وضعیت', progress: 'پیشرفت', created: 'ایجاد',
      job_queued: 'در صف', job_running: 'در حال اجرا', job_succeeded: 'موفق', job_failed: 'ناموفق',
      job_cancelled: 'لغوشده', job_pendingItems: 'بخش‌های در انتظار', noJobs: 'کاری در حال اجرا نیست.',
      recentFailures: 'خطاهای اخیر', requestId: 'شناسهٔ درخواست', time: 'زمان', statusCode: 'کد HTTP', code: 'کد خطا',
      route: 'مسیر', upstream: 'بالادست', noFailures: 'خطایی نیست.',
      callerTokens: 'توکن‌های فراخوان', userId: 'شناسهٔ کاربر', labelOptional: 'برچسب (اختیاری)', createToken: 'ساخت توکن',
      secretWarning: 'این توکن را همین حالا کپی کنید: فقط یک بار نشان داده می‌شود و دیگر قابل نمایش نیست.',
      copy: 'کپی', copied: 'کپی شد', dismiss: 'تمام', lastUsed: 'آخرین استفاده', revoked: 'باطل‌شده', revoke: 'ابطال',
      revokeConfirm: 'توکن {id} کاربر {user} باطل شود؟ برنامه‌هایی که از آن استفاده می‌کنند بی‌درنگ از کار می‌افتند.',
      tokenCreated: 'توکن ساخته شد.', tokenRevoked: 'توکن باطل شد.', refused: 'پذیرفته نشد: {detail}',
      noTokens: 'توکنی نیست.', noCallers: 'در این بازه فراخوانی نیست.', exported: '{file} بارگیری شد',
      task_summarize: 'خلاصه', task_rewrite: 'بازنویسی', 'task_key-points': 'نکات کلیدی', task_titles: 'عنوان‌ها',
      cost: 'هزینه', costPerDay: 'هزینه در روز', noPrices: 'بی‌قیمت', budgets: 'بودجه‌ها', scope: 'دامنه',
      period: 'دوره', used: 'مصرف‌شده', held: 'در جریان', limit: 'سقف', share: 'سهم', resets: 'از نو',
      scope_caller: 'فراخوان', scope_guests: 'همهٔ مهمان‌ها', scope_devices: 'همهٔ دستگاه‌ها', scope_gateway: 'کل درگاه',
      period_day: 'روزانه', period_month: 'ماهانه', noBudgets: 'بودجهٔ مشترکی تعیین نشده است.', models: 'مدل‌ها',
      noModels: 'در این بازه مدلی پاسخ نداده است.', noModel: '(هیچ)', tokensUnit: '{n} توکن',
    },
  };

  // ---- state --------------------------------------------------------------------------

  const state = {
    lang: 'fa',
    range: 'today',
    token: null,
    data: {},                 // the last answers, so a language switch re-renders without fetching
    sort: { key: 'requests', descending: true },
    generation: 0,            // a refresh's answers are dropped when a newer refresh started
    timer: null,
    plansLoaded: false,
  };

  const $ = (selector, root) => (root || document).querySelector(selector);
  const $$ = (selector, root) => Array.from((root || document).querySelectorAll(selector));

  function t(key, values) {
    const table = STRINGS[state.lang] || STRINGS.en;
    let text = key in table ? table[key] : (key in STRINGS.en ? STRINGS.en[key] : key);
    // A Date value is formatted here, so a message said again after a language switch has the new digits.
    const show = (value) => value instanceof Date
      ? new Intl.DateTimeFormat(locale(), { timeStyle: 'medium' }).format(value) : String(value);
    if (values) for (const name of Object.keys(values)) text = text.split('{' + name + '}').join(show(values[name]));
    return text;
  }
  function locale() { return state.lang === 'fa' ? 'fa-IR' : 'en-GB'; }
  function formatNumber(n) { return n === null || n === undefined ? '—' : new Intl.NumberFormat(locale()).format(n); }
  function formatPercent(x) {
    if (x === null || x === undefined) return '—';
    return new Intl.NumberFormat(locale(), { style: 'percent', maximumFractionDigits: 1 }).format(x);
  }
  // Micro-units of the gateway's currency (from /api/admin/plans) as an amount people read:
  // at least the currency's minor units, up to all six digits a small cost needs.
  function formatMoney(micros) {
    const plans = state.data.plans || {};
    if (micros === null || micros === undefined) return '—';
    if (!plans.currency) return t('noPrices');
    const digits = Math.max(0, Math.min(6, plans.currencyMinorUnits || 0));
    const amount = new Intl.NumberFormat(locale(), { minimumFractionDigits: digits, maximumFractionDigits: 6 })
      .format(micros / 1e6);
    return amount + '\u00a0' + plans.currency;
  }
  // A budget's amount in its unit: money or tokens.
  function formatBudget(amount, unit) {
    return unit === 'micros' ? formatMoney(amount) : t('tokensUnit', { n: formatNumber(amount) });
  }
  function formatMs(x) {
    if (x === null || x === undefined) return '—';
    return t('ms', { n: new Intl.NumberFormat(locale(), { maximumFractionDigits: 1 }).format(x) });
  }
  function formatTime(iso) {
    if (!iso) return '—';
    const date = new Date(iso);
    if (isNaN(date.getTime())) return iso;
    return new Intl.DateTimeFormat(locale(), { dateStyle: 'medium', timeStyle: 'short' }).format(date);
  }
  // "2026-12-01" (a local day of the series) as a short date in the page's language.
  function formatDay(day) {
    const [y, m, d] = day.split('-').map(Number);
    return new Intl.DateTimeFormat(locale(), { month: 'short', day: 'numeric' }).format(new Date(y, m - 1, d, 12));
  }
  function taskName(task) {
    if (task === '') return t('noTask');
    return ('task_' + task) in STRINGS[state.lang] ? t('task_' + task) : task;
  }

  function el(tag, attributes, children) {
    const node = document.createElement(tag);
    if (attributes) {
      for (const [name, value] of Object.entries(attributes)) {
        if (value === null || value === undefined || value === false) continue;
        if (name === 'text') node.textContent = value;
        else if (name === 'class') node.className = value;
        else node.setAttribute(name, value === true ? '' : value);
      }
    }
    for (const child of children || []) if (child !== null && child !== undefined) node.append(child);
    return node;
  }
  function svg(tag, attributes, children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
    for (const child of children || []) node.append(child);
    return node;
  }
  // The status line keeps its key, so a language switch says it again in the new language.
  let statusMessage = null;
  function setStatus(key, values) {
    statusMessage = key ? { key, values } : null;
    $('#status').textContent = key ? t(key, values) : '';
  }
  // Outcome of a token action: an error is red, a success is not. Kept as a key like the status.
  let tokenOutcome = null;
  function tokenMessage(key, values, ok) {
    tokenOutcome = key ? { key, values, ok } : null;
    const node = $('#token-create-message');
    node.textContent = key ? t(key, values) : '';
    node.classList.toggle('ok', !!ok);
  }

  // ---- language -------------------------------------------------------------------------

  function applyLanguage(lang) {
    state.lang = lang === 'en' ? 'en' : 'fa';
    const root = document.documentElement;
    root.lang = state.lang;
    root.dir = state.lang === 'fa' ? 'rtl' : 'ltr';
    document.title = t('title');
    for (const node of $$('[data-i18n]')) node.textContent = t(node.dataset.i18n);
    for (const node of $$('[data-i18n-placeholder]')) node.placeholder = t(node.dataset.i18nPlaceholder);
    for (const node of $$('[data-i18n-label]')) node.setAttribute('aria-label', t(node.dataset.i18nLabel));
    $('#lang-fa').setAttribute('aria-pressed', String(state.lang === 'fa'));
    $('#lang-en').setAttribute('aria-pressed', String(state.lang === 'en'));
    if (statusMessage) setStatus(statusMessage.key, statusMessage.values);
    if (tokenOutcome) tokenMessage(tokenOutcome.key, tokenOutcome.values, tokenOutcome.ok);
    renderAll();
  }

  function initialLanguage() {
    const saved = localStorage.getItem(LANG_KEY);
    if (saved === 'fa' || saved === 'en') return saved;
    const served = document.documentElement.lang;   // the server's ERROR_LANGUAGE
    return served === 'en' ? 'en' : 'fa';
  }

  // ---- time range -----------------------------------------------------------------------

  // RFC 3339 in UTC without fractions: what the API parses.
  function rfc3339(date) { return date.toISOString().replace(/\.\d{3}Z$/, 'Z'); }

  // from = local midnight of the first day, to = now rounded up to the next minute (so a
  // request made this minute is inside the half-open range).
  function currentRange() {
    const now = new Date();
    const days = state.range === '30d' ? 30 : state.range === '7d' ? 7 : 1;
    const from = new Date(now.getFullYear(), now.getMonth(), now.getDate() - (days - 1));
    const to = new Date(Math.floor(now.getTime() / 60000) * 60000 + 60000);
    return { from: rfc3339(from), to: rfc3339(to), tzOffset: -now.getTimezoneOffset() };
  }
  function rangeQuery(withOffset) {
    const range = currentRange();
    let query = 'from=' + encodeURIComponent(range.from) + '&to=' + encodeURIComponent(range.to);
    if (withOffset) query += '&tzOffset=' + range.tzOffset;
    return query;
  }
  function markRange() {
    for (const button of $$('[data-range]')) button.setAttribute('aria-pressed', String(button.dataset.range === state.range));
  }

  // ---- API ------------------------------------------------------------------------------

  // `gatewayMessage` is the gateway's own sentence for the error (in its ERROR_LANGUAGE), when it sent one.
  class ApiError extends Error {
    constructor(status, code, message) {
      super(message || code);
      this.status = status;
      this.code = code;
      this.gatewayMessage = message || '';
    }
  }

  // The error a non-2xx answer carries: the gateway's `{"error":true,"code","message",…}`
  // (docs/api.md, "Errors"), or the bare status when the body is not that.
  async function errorOf(response) {
    let code = 'http_' + response.status, message = '';
    try {
      const body = await response.json();
      if (body && body.error === true && typeof body.code === 'string') {
        code = body.code;
        message = typeof body.message === 'string' ? body.message : '';
      }
    } catch (ignored) { /* not JSON: keep the status */ }
    return new ApiError(response.status, code, message);
  }

  // An error as the operator reads it: the gateway's message and its code, or the code alone.
  function describe(error) {
    if (error.code === 'network') return t('networkError');
    return error.gatewayMessage ? error.gatewayMessage + ' (' + error.code + ')' : error.code;
  }

  async function api(path, options) {
    const init = Object.assign({ headers: {} }, options || {});
    // The console's language, for a gateway whose ERROR_LANGUAGE is `auto`.
    init.headers = Object.assign({ Authorization: 'Bearer ' + state.token, 'Accept-Language': state.lang }, init.headers);
    init.cache = 'no-store';
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      throw new ApiError(0, 'network', t('networkError'));
    }
    if (response.status === 401) {
      logout(t('loginExpired'));
      throw new ApiError(401, 'unauthorized');
    }
    if (!response.ok) throw await errorOf(response);
    return response;
  }
  async function apiJSON(path, options) { return (await api(path, options)).json(); }

  function sectionError(name, error) {
    const node = $('[data-section-error="' + name + '"]');
    if (!node) return;
    if (!error) { node.textContent = ''; return; }
    node.textContent = error.code === 'store_unavailable' ? t('storeUnavailable')
      : error.code === 'network' ? t('networkError') : t('failed', { detail: describe(error) });
  }

  // ---- login / logout -------------------------------------------------------------------

  function showConsole(loggedIn) {
    $('#login').hidden = loggedIn;
    $('#console').hidden = !loggedIn;
    for (const node of $$('.needs-login')) node.hidden = !loggedIn;
  }

  function logout(message) {
    state.token = null;
    state.generation += 1;
    state.data = {};
    state.plansLoaded = false;
    sessionStorage.removeItem(TOKEN_KEY);
    if (state.timer) { clearInterval(state.timer); state.timer = null; }
    hideSecret();
    tokenMessage(null);
    showConsole(false);
    setStatus(null);
    $('#login-message').textContent = message || '';
    $('#login-token').value = '';
    $('#login-token').focus();
  }

  // A token is accepted when an authenticated call answers; /api/admin/plans is the cheapest.
  async function login(token, quiet) {
    state.token = token;
    let plans;
    try {
      const response = await fetch('/api/admin/plans', {
        headers: { Authorization: 'Bearer ' + token, 'Accept-Language': state.lang }, cache: 'no-store',
      });
      if (response.status === 401) { logout(quiet ? '' : t('loginWrong')); return; }
      if (response.status === 404) { logout(t('loginDisabled')); return; }
      if (!response.ok) throw await errorOf(response);
      plans = await response.json();
    } catch (error) {
      state.token = null;
      $('#login-message').textContent = error instanceof ApiError ? t('failed', { detail: describe(error) }) : t('networkError');
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    $('#login-message').textContent = '';
    $('#login-token').value = '';
    state.data.plans = plans;
    fillPlans();
    showConsole(true);
    refresh();
    if (state.timer) clearInterval(state.timer);
    state.timer = setInterval(refresh, REFRESH_MS);
  }

  function fillPlans() {
    const select = $('#token-create-plan');
    const plans = (state.data.plans && state.data.plans.plans) || [];
    const chosen = select.value || (state.data.plans && state.data.plans.defaultPlan);
    select.replaceChildren(...plans.map((plan) => el('option', { value: plan.name, text: plan.name })));
    if (chosen && plans.some((plan) => plan.name === chosen)) select.value = chosen;
  }

  // ---- refresh --------------------------------------------------------------------------

  const SECTIONS = [
    { name: 'totals', key: 'summary', path: () => '/api/admin/summary?' + rangeQuery(false), render: renderTotals },
    { name: 'series', key: 'series', path: () => '/api/admin/series?' + rangeQuery(true), render: renderSeries },
    { name: 'callers', key: 'callers', path: () => '/api/admin/callers?' + rangeQuery(false), render: renderCallers },
    { name: 'models', key: 'models', path: () => '/api/admin/models?' + rangeQuery(false), render: renderModels },
    { name: 'budgets', key: 'budgets', path: () => '/api/admin/budgets', render: renderBudgets },
    { name: 'upstreams', key: 'upstreams', path: () => '/api/admin/upstreams', render: renderUpstreams },
    { name: 'failures', key: 'failures', path: () => '/api/admin/failures?limit=20', render: renderFailures },
    { name: 'jobs', key: 'jobs', path: () => '/api/admin/jobs', render: renderJobs },
    { name: 'tokens', key: 'tokens', path: () => '/api/admin/tokens', render: renderTokens },
  ];

  async function refresh() {
    if (!state.token) return;
    const generation = ++state.generation;
    setStatus('loading');
    document.body.classList.add('busy');
    await Promise.all(SECTIONS.map(async (section) => {
      try {
        const body = await apiJSON(section.path());
        if (generation !== state.generation) return;
        state.data[section.key] = body;
        sectionError(section.name, null);
        section.render();
      } catch (error) {
        if (generation !== state.generation || error.status === 401) return;
        sectionError(section.name, error);
      }
    }));
    if (generation !== state.generation) return;
    document.body.classList.remove('busy');
    setStatus('updated', { time: new Date() });
    document.body.dataset.loaded = String(generation);   // the browser test waits on this
  }

  function renderAll() {
    if (!state.token) return;
    fillPlans();
    for (const section of SECTIONS) if (state.data[section.key]) section.render();
  }

  // ---- totals ---------------------------------------------------------------------------

  function renderTotals() {
    const s = state.data.summary;
    $('#total-requests').textContent = formatNumber(s.requests);
    $('#total-input-tokens').textContent = formatNumber(s.inputTokens);
    $('#total-output-tokens').textContent = formatNumber(s.outputTokens);
    $('#total-cost').textContent = formatMoney(s.costMicros);
    $('#total-cache-hits').textContent = formatNumber(s.cacheHits);
    $('#total-error-rate').textContent = formatPercent(s.errorRate);
    const added = s.addedLatencyMs || {}, upstream = s.upstreamLatencyMs || {};
    $('#total-added-p50').textContent = formatMs(added.p50);
    $('#total-added-p95').textContent = formatMs(added.p95);
    $('#total-upstream-p50').textContent = formatMs(upstream.p50);
    $('#total-upstream-p95').textContent = formatMs(upstream.p95);
  }

  // ---- charts (SVG) ---------------------------------------------------------------------

  // A "nice" upper bound for an axis and its ticks: 1, 2 or 5 times a power of ten.
  function niceTicks(max, count, fractional) {
    if (!(max > 0)) return [0, 1];
    const raw = max / count;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= raw) || raw;
    const step2 = fractional ? step : Math.max(step, 1);       // counts are integers; money is not
    const ticks = [];
    for (let i = 0; i * step2 < max + step2; i++) ticks.push(Number((i * step2).toPrecision(12)));
    return ticks;
  }

  // The width the chart has on screen now (drawn again when the window's size changes).
  function chartWidth(container) { return Math.max(280, Math.floor(container.clientWidth || 600)); }

  // series: [{name, values: [number per day]}]; stacked bars per day, or a line when line=true.
  function drawChart(container, days, series, options) {
    container.replaceChildren();
    const total = series.reduce((sum, s) => sum + s.values.reduce((a, b) => a + b, 0), 0);
    if (days.length === 0 || total === 0) {
      container.append(el('p', { class: 'empty', text: t('noData') }));
      return;
    }
    const width = chartWidth(container), height = options.height || 200;
    const margin = { top: 10, right: 12, bottom: 28, left: 48 };
    const plotW = width - margin.left - margin.right, plotH = height - margin.top - margin.bottom;
    const sums = days.map((_, i) => options.line
      ? Math.max(...series.map((s) => s.values[i]))
      : series.reduce((sum, s) => sum + s.values[i], 0));
    const ticks = niceTicks(Math.max(...sums), 4, options.fractional);
    const top = ticks[ticks.length - 1];
    const y = (v) => margin.top + plotH - (v / top) * plotH;
    const slot = plotW / days.length;
    const barW = Math.max(2, Math.min(40, slot * 0.7));
    const x = (i) => margin.left + slot * i + slot / 2;

    const root = svg('svg', {
      width, height, viewBox: '0 0 ' + width + ' ' + height, role: 'img', class: 'chart-svg',
      'aria-label': options.title,
    });
    // Horizontal grid lines and the value axis.
    for (const tick of ticks) {
      root.append(svg('line', { x1: margin.left, x2: width - margin.right, y1: y(tick), y2: y(tick), class: 'grid' }));
      const label = svg('text', { x: margin.left - 6, y: y(tick) + 4, 'text-anchor': 'end', class: 'axis-label' });
      label.textContent = options.format ? options.format(tick) : formatNumber(tick);
      root.append(label);
    }
    root.append(svg('line', { x1: margin.left, x2: margin.left, y1: margin.top, y2: margin.top + plotH, class: 'axis' }));
    root.append(svg('line', {
      x1: margin.left, x2: width - margin.right, y1: margin.top + plotH, y2: margin.top + plotH, class: 'axis',
    }));
    // Day labels: as many as fit without overlapping (about 56 px each).
    const every = Math.max(1, Math.ceil(days.length / Math.max(1, Math.floor(plotW / 56))));
    days.forEach((day, i) => {
      if (i % every !== 0 && i !== days.length - 1) return;
      const label = svg('text', { x: x(i), y: height - 8, 'text-anchor': 'middle', class: 'axis-label' });
      label.textContent = formatDay(day);
      root.append(label);
    });

    if (options.line) {
      series.forEach((s, index) => {
        const points = s.values.map((v, i) => x(i).toFixed(1) + ',' + y(v).toFixed(1)).join(' ');
        root.append(svg('polyline', { points, class: 'line series-' + (index % 8) }));
        s.values.forEach((v, i) => {
          const dot = svg('circle', { cx: x(i), cy: y(v), r: days.length > 40 ? 2 : 3.5, class: 'dot series-' + (index % 8) });
          dot.append(svg('title', {}, [document.createTextNode(formatDay(days[i]) + ' — ' + s.name + ': ' + formatNumber(v))]));
          root.append(dot);
        });
      });
    } else {
      days.forEach((day, i) => {
        let base = 0;
        series.forEach((s, index) => {
          const v = s.values[i];
          if (!v) return;
          const rect = svg('rect', {
            x: (x(i) - barW / 2).toFixed(1), y: y(base + v).toFixed(1), width: barW.toFixed(1),
            height: Math.max(1, y(base) - y(base + v)).toFixed(1), class: 'bar series-' + (index % 8),
          });
          rect.append(svg('title', {}, [document.createTextNode(formatDay(day) + ' — ' + s.name + ': ' + formatNumber(v))]));
          root.append(rect);
          base += v;
        });
      });
    }
    container.append(root);
    // The legend: HTML, so it wraps on a narrow screen and reads in the page's direction.
    const legend = el('ul', { class: 'legend' }, series.map((s, index) =>
      el('li', {}, [el('span', { class: 'swatch series-' + (index % 8), 'aria-hidden': 'true' }), document.createTextNode(s.name)])));
    container.append(legend);
  }

  function renderSeries() {
    const days = (state.data.series && state.data.series.days) || [];
    const labels = days.map((d) => d.day);
    // Tasks in order of their total requests, so the biggest sits at the bottom of each bar.
    const byTask = new Map();
    for (const day of days) for (const task of day.tasks || []) byTask.set(task.task, (byTask.get(task.task) || 0) + task.requests);
    const tasks = Array.from(byTask.keys()).sort((a, b) => byTask.get(b) - byTask.get(a));
    const requestSeries = tasks.map((task) => ({
      name: taskName(task),
      values: days.map((d) => ((d.tasks || []).find((x) => x.task === task) || { requests: 0 }).requests),
    }));
    drawChart($('#chart-requests'), labels, requestSeries, { title: t('requestsByTask') });
    drawChart($('#chart-tokens'), labels, [
      { name: t('inputTokens'), values: days.map((d) => d.inputTokens) },
      { name: t('outputTokens'), values: days.map((d) => d.outputTokens) },
    ], { title: t('tokensPerDay'), line: true, height: 170 });
    drawChart($('#chart-cost'), labels, tasks.map((task) => ({
      name: taskName(task),
      values: days.map((d) => ((d.tasks || []).find((x) => x.task === task) || { costMicros: 0 }).costMicros / 1e6),
    })), {
      title: t('costPerDay'), height: 170, fractional: true,
      format: (v) => new Intl.NumberFormat(locale(), { maximumFractionDigits: 6 }).format(v),
    });
    const byCode = new Map();
    for (const day of days) for (const c of day.errorCodes || []) byCode.set(c.code, (byCode.get(c.code) || 0) + c.count);
    const codes = Array.from(byCode.keys()).sort((a, b) => byCode.get(b) - byCode.get(a));
    drawChart($('#chart-errors'), labels, codes.map((code) => ({
      name: code,
      values: days.map((d) => ((d.errorCodes || []).find((x) => x.code === code) || { count: 0 }).count),
    })), { title: t('errorsByCode'), height: 170 });
  }

  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (state.token && state.data.series) renderSeries(); }, 150);
  });

  // ---- callers --------------------------------------------------------------------------

  function callerUser(c) { return c.kind === 'guest' ? t('guests') : c.userId; }
  const CALLER_SORT = {
    user: (c) => callerUser(c).toLowerCase(), label: (c) => (c.label || '').toLowerCase(), kind: (c) => c.kind,
    plan: (c) => c.plan || '', requests: (c) => c.requests, tokens: (c) => c.inputTokens + c.outputTokens,
    cost: (c) => c.costMicros || 0,
    quota: (c) => (c.quotaUsedToday === null || c.quotaUsedToday === undefined ? -1 : c.quotaUsedToday),
    lastSeen: (c) => c.lastSeen || '',
  };

  function renderCallers() {
    const callers = ((state.data.callers && state.data.callers.callers) || []).slice();
    const needle = $('#callers-search').value.trim().toLowerCase();
    const shown = needle ? callers.filter((c) =>
      [c.userId, c.label || '', c.plan || ''].some((field) => field.toLowerCase().includes(needle))) : callers;
    const key = CALLER_SORT[state.sort.key] ? state.sort.key : 'requests';
    const value = CALLER_SORT[key];
    shown.sort((a, b) => {
      const va = value(a), vb = value(b);
      const order = va < vb ? -1 : va > vb ? 1 : 0;
      return state.sort.descending ? -order : order;
    });
    for (const th of $$('#callers-table th[data-sort]')) {
      th.setAttribute('aria-sort', th.dataset.sort === key ? (state.sort.descending ? 'descending' : 'ascending') : 'none');
    }
    const rows = shown.map((c) => {
      const quota = c.quotaUsedToday;
      const quotaCell = quota === null || quota === undefined
        ? el('td', { class: 'muted', text: t('noQuota') })
        : el('td', { class: 'quota' }, [
          el('meter', { min: '0', max: '1', low: '0.7', high: '0.9', optimum: '0', value: String(Math.min(1, quota)) }),
          el('span', { text: formatPercent(quota) }),
        ]);
      return el('tr', { class: 'caller-row', 'data-user': c.userId, 'data-kind': c.kind }, [
        el('td', { text: callerUser(c), dir: 'auto' }),
        el('td', { text: c.label || '—', dir: 'auto' }),
        el('td', { text: t('kind_' + c.kind) }),
        el('td', { text: c.plan || '—' }),
        el('td', { class: 'num', text: formatNumber(c.requests) }),
        el('td', { class: 'num', text: formatNumber(c.inputTokens + c.outputTokens) }),
        el('td', { class: 'num cost', text: formatMoney(c.costMicros) }),
        quotaCell,
        el('td', { text: formatTime(c.lastSeen) }),
      ]);
    });
    if (rows.length === 0) rows.push(el('tr', {}, [el('td', { colspan: '9', class: 'empty', text: t('noCallers') })]));
    $('#callers-table tbody').replaceChildren(...rows);
  }

  // ---- models and budgets -------------------------------------------------------------

  function renderModels() {
    const models = (state.data.models && state.data.models.models) || [];
    const rows = models.map((m) => el('tr', { class: 'model-row', 'data-model': m.model || '' }, [
      el('td', { text: m.model || t('noModel'), dir: 'ltr' }),
      el('td', { class: 'num', text: formatNumber(m.requests) }),
      el('td', { class: 'num', text: formatNumber(m.inputTokens + m.outputTokens) }),
      el('td', { class: 'num cost', text: formatMoney(m.costMicros) }),
    ]));
    if (rows.length === 0) rows.push(el('tr', {}, [el('td', { colspan: '4', class: 'empty', text: t('noModels') })]));
    $('#models-table tbody').replaceChildren(...rows);
  }

  function renderBudgets() {
    const body = state.data.budgets || {};
    const rows = (body.budgets || []).map((b) => el('tr', {
      class: 'budget-row', 'data-scope': b.scope, 'data-period': b.period, 'data-unit': b.unit,
    }, [
      el('td', { text: t('scope_' + b.scope) }),
      el('td', { text: t('period_' + b.period) }),
      el('td', { class: 'num', 'data-field': 'used', text: formatBudget(b.used, b.unit) }),
      el('td', { class: 'num', text: formatBudget(b.held, b.unit) }),
      el('td', { class: 'num', 'data-field': 'limit', text: formatBudget(b.limit, b.unit) }),
      el('td', { class: 'quota' }, [
        el('meter', { min: '0', max: '1', low: '0.8', high: '0.95', optimum: '0', value: String(Math.min(1, b.fractionUsed)) }),
        el('span', { 'data-field': 'share', text: formatPercent(b.fractionUsed) }),
      ]),
      el('td', { text: formatTime(b.resetsAt) }),
    ]));
    if (rows.length === 0) rows.push(el('tr', {}, [el('td', { colspan: '7', class: 'empty', text: t('noBudgets') })]));
    $('#budgets-table tbody').replaceChildren(...rows);
    $('#plan-budgets').replaceChildren(...(body.plans || []).map((plan) => el('div', { 'data-plan': plan.plan }, [
      el('dt', { text: t('plan') + ' ' + plan.plan }),
      el('dd', { text: plan.budgets.map((b) => formatBudget(b.limit, b.unit) + ' / ' + t('period_' + b.period)).join(' + ') }),
    ])));
  }

  // ---- upstreams, failures, jobs --------------------------------------------------------

  function renderUpstreams() {
    const upstreams = (state.data.upstreams && state.data.upstreams.upstreams) || [];
    $('#upstreams-table tbody').replaceChildren(...upstreams.map((u) => el('tr', { class: 'upstream-row', 'data-name': u.name }, [
      el('td', { text: u.name }),
      el('td', { text: u.model, dir: 'ltr' }),
      el('td', {}, [el('span', { class: 'badge state-' + u.state, text: t('state_' + u.state) })]),
      el('td', { class: 'num', text: formatNumber(u.answers) }),
      el('td', { class: 'num', text: formatNumber(u.failures) }),
    ])));
  }

  function renderFailures() {
    const failures = (state.data.failures && state.data.failures.failures) || [];
    const rows = failures.map((f) => el('tr', { class: 'failure-row', 'data-request-id': f.requestId }, [
      el('td', { class: 'mono', text: f.requestId, dir: 'ltr' }),
      el('td', { text: formatTime(f.at) }),
      el('td', { class: 'num', text: formatNumber(f.status) }),
      el('td', { class: 'mono', text: f.code || '—' }),
      el('td', { class: 'mono', text: f.route, dir: 'ltr' }),
      el('td', { text: f.upstream || '—' }),
    ]));
    if (rows.length === 0) rows.push(el('tr', {}, [el('td', { colspan: '6', class: 'empty', text: t('noFailures') })]));
    $('#failures-table tbody').replaceChildren(...rows);
  }

  function renderJobs() {
    const body = state.data.jobs || {};
    const statistics = body.statistics || {};
    $('#job-statistics').replaceChildren(...['queued', 'running', 'succeeded', 'failed', 'cancelled', 'pendingItems'].map((name) =>
      el('div', {}, [el('dt', { text: t('job_' + name) }), el('dd', { 'data-stat': name, text: formatNumber(statistics[name] || 0) })])));
    const rows = (body.jobs || []).map((job) => el('tr', { class: 'job-row', 'data-id': job.id }, [
      el('td', { class: 'mono', text: job.id, dir: 'ltr' }),
      el('td', { text: taskName(job.task) }),
      el('td', { text: job.userId || '—' }),
      el('td', { text: t('job_' + job.status) }),
      el('td', { class: 'progress-cell' }, [
        el('progress', { max: String(Math.max(1, job.total)), value: String(job.done) }),
        el('span', { text: formatNumber(job.done) + ' / ' + formatNumber(job.total) }),
      ]),
      el('td', { text: formatTime(job.createdAt) }),
    ]));
    if (rows.length === 0) rows.push(el('tr', {}, [el('td', { colspan: '6', class: 'empty', text: t('noJobs') })]));
    $('#jobs-table tbody').replaceChildren(...rows);
  }

  // ---- caller tokens --------------------------------------------------------------------

  function renderTokens() {
    const tokens = (state.data.tokens && state.data.tokens.tokens) || [];
    const rows = tokens.map((token) => el('tr', {
      class: 'token-row' + (token.revokedAt ? ' revoked' : ''), 'data-id': token.id, 'data-user': token.userId,
    }, [
      el('td', { class: 'mono', text: token.id, dir: 'ltr' }),
      el('td', { text: token.userId, dir: 'auto' }),
      el('td', { text: token.plan }),
      el('td', { text: token.label || '—', dir: 'auto' }),
      el('td', { text: formatTime(token.createdAt) }),
      el('td', { text: formatTime(token.lastUsedAt) }),
      el('td', { text: token.revokedAt ? formatTime(token.revokedAt) : '—' }),
      el('td', {}, [token.revokedAt ? null : el('button', {
        type: 'button', class: 'revoke danger', 'data-id': token.id, 'data-user': token.userId, text: t('revoke'),
      })]),
    ]));
    if (rows.length === 0) rows.push(el('tr', {}, [el('td', { colspan: '8', class: 'empty', text: t('noTokens') })]));
    $('#tokens-table tbody').replaceChildren(...rows);
  }

  // The secret lives only in this input until "Done", a logout or the next creation: never in
  // storage, never in state.data.
  function showSecret(secret, id) {
    $('#token-secret').value = secret;
    $('#token-secret-box').dataset.tokenId = id;
    $('#token-secret-box').hidden = false;
    $('#token-secret').select();
  }
  function hideSecret() {
    $('#token-secret').value = '';
    delete $('#token-secret-box').dataset.tokenId;
    $('#token-secret-box').hidden = true;
  }

  async function createToken(event) {
    event.preventDefault();
    tokenMessage(null);
    hideSecret();
    const body = { userId: $('#token-create-user').value.trim(), plan: $('#token-create-plan').value };
    const label = $('#token-create-label').value.trim();
    if (label) body.label = label;
    $('#token-create-submit').disabled = true;
    try {
      const created = await apiJSON('/api/admin/tokens', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
      });
      showSecret(created.token, created.id);
      tokenMessage('tokenCreated', null, true);
      $('#token-create-user').value = '';
      $('#token-create-label').value = '';
      await reloadTokens();
    } catch (error) {
      if (error.status === 401) return;
      tokenMessage('refused', { detail: describe(error) });
    } finally {
      $('#token-create-submit').disabled = false;
    }
  }

  async function revokeToken(button) {
    const { id, user } = button.dataset;
    if (!window.confirm(t('revokeConfirm', { id, user }))) return;
    button.disabled = true;
    try {
      await api('/api/admin/tokens/' + encodeURIComponent(id), { method: 'DELETE' });
      tokenMessage('tokenRevoked', null, true);
    } catch (error) {
      if (error.status === 401) return;
      tokenMessage('refused', { detail: describe(error) });
    }
    await reloadTokens();
  }

  async function reloadTokens() {
    try {
      state.data.tokens = await apiJSON('/api/admin/tokens');
      sectionError('tokens', null);
      renderTokens();
    } catch (error) {
      if (error.status !== 401) sectionError('tokens', error);
    }
  }

  // ---- CSV export -----------------------------------------------------------------------

  // A plain link cannot send the Authorization header, so the CSV is fetched and handed to
  // the browser as a Blob through a temporary <a download>.
  async function exportCSV(path, fallbackName) {
    try {
      const response = await api(path);
      const disposition = response.headers.get('Content-Disposition') || '';
      const match = /filename="?([^";]+)"?/.exec(disposition);
      const name = match ? match[1] : fallbackName;
      const url = URL.createObjectURL(await response.blob());
      const link = el('a', { href: url, download: name, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      setStatus('exported', { file: name });
    } catch (error) {
      if (error.status !== 401) setStatus('failed', { detail: describe(error) });
    }
  }

  // ---- wiring ---------------------------------------------------------------------------

  function start() {
    $('#login-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const token = $('#login-token').value.trim();
      if (token) login(token, false);
    });
    $('#logout').addEventListener('click', () => logout(''));
    $('#refresh').addEventListener('click', () => refresh());
    for (const button of $$('[data-range]')) {
      button.addEventListener('click', () => { state.range = button.dataset.range; markRange(); refresh(); });
    }
    for (const lang of ['fa', 'en']) {
      $('#lang-' + lang).addEventListener('click', () => { localStorage.setItem(LANG_KEY, lang); applyLanguage(lang); });
    }
    for (const th of $$('#callers-table th[data-sort]')) {
      th.tabIndex = 0;
      const sortBy = () => {
        const key = th.dataset.sort;
        state.sort = { key, descending: state.sort.key === key ? !state.sort.descending : !['user', 'label', 'kind', 'plan'].includes(key) };
        renderCallers();
      };
      th.addEventListener('click', sortBy);
      th.addEventListener('keydown', (event) => { if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); sortBy(); } });
    }
    $('#callers-search').addEventListener('input', () => { if (state.data.callers) renderCallers(); });
    $('#token-create-form').addEventListener('submit', createToken);
    $('#tokens-table').addEventListener('click', (event) => {
      const button = event.target.closest('button.revoke');
      if (button) revokeToken(button);
    });
    $('#token-secret-copy').addEventListener('click', async () => {
      const input = $('#token-secret');
      try { await navigator.clipboard.writeText(input.value); } catch (ignored) { input.select(); document.execCommand('copy'); }
      $('#token-secret-copy').textContent = t('copied');
      setTimeout(() => { $('#token-secret-copy').textContent = t('copy'); }, 2000);
    });
    $('#token-secret-dismiss').addEventListener('click', hideSecret);
    $('#export-callers').addEventListener('click', () => exportCSV('/api/admin/callers?' + rangeQuery(false) + '&format=csv', 'textgateway-callers.csv'));
    $('#export-models').addEventListener('click', () => exportCSV('/api/admin/models?' + rangeQuery(false) + '&format=csv', 'textgateway-models.csv'));
    $('#export-series').addEventListener('click', () => exportCSV('/api/admin/series?' + rangeQuery(true) + '&format=csv', 'textgateway-series.csv'));

    markRange();
    applyLanguage(initialLanguage());
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) login(saved, true); else showConsole(false);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();
