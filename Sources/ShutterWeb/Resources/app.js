"use strict";
const $ = (id) => document.getElementById(id);
const preview = $("preview"), stage = $("stage"), clock = $("clock"), mode = $("mode");
const rec = $("rec"), countdown = $("countdown"), flash = $("flash");
const cameraState = $("camera-state"), storageState = $("storage-state"), toast = $("toast");
const snapButton = $("snap"), delayedButton = $("delayed"), delaySelect = $("delay");
const everyInput = $("every"), startStopButton = $("startstop");
const libraryButton = $("library-button"), library = $("library");
const gallery = $("gallery"), more = $("more"), empty = $("empty");
const viewer = $("viewer"), full = $("full"), caption = $("caption");
const download = $("download"), deleteButton = $("delete"), closeButton = $("close");

const PAGE_SIZE = 36;
const THUMB_WIDTH = 320;
// Interval jobs must end (max_job_shots, 10000 by default); a lower limit is read from the refusal.
const INTERVAL_SHOTS = 10000;
const INTERVAL_LABEL = "web page";
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// How long to wait before opening /events again when the browser gave up on it, and before
// asking for a frame again after a failed one.
const RECONNECT_MS = 1000, FRAME_RETRY_MS = 1000;

// ---- the API: JSON in, JSON out; an error answer becomes an Error with its sentence.
class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}
async function request(method, path, { body, headers } = {}) {
  const init = { method, headers: { Accept: "application/json", ...headers } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new APIError(0, "shutterd is not reachable");
  }
  if (response.status === 204 || response.status === 304) return { response, data: null };
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const sentence = data && data.error
      ? data.error + (data.detail ? ": " + data.detail : "")
      : `${method} ${path}: HTTP ${response.status}`;
    throw new APIError(response.status, sentence);
  }
  return { response, data };
}
const api = async (method, path, body) => (await request(method, path, { body })).data;

// ---- errors: a toast, never swallowed; a failing read is reported once until it changes.
let toastTimer = 0;
function showError(error) {
  toast.textContent = error && error.message ? error.message : String(error);
  toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { toast.hidden = true; }, 6000);
}
toast.addEventListener("click", () => { toast.hidden = true; });
let lastPollError = "";
function pollFailed(error) {
  if (error.message !== lastPollError) showError(error);
  lastPollError = error.message;
}

// ---- the overlay: clock, size and frame rate, the job indicator, the countdown.
// The size is the preview's own (no request needed); the frame rate is what camera.state says,
// when it says one.
let cameraFPS = null;
function tickClock() {
  const now = new Date();
  clock.dateTime = now.toISOString();
  clock.textContent = now.toLocaleTimeString();
  showMode();
}
function showMode() {
  const width = preview.naturalWidth, height = preview.naturalHeight;
  if (!width || !height) return;
  mode.textContent = `${width}×${height}` + (cameraFPS ? ` · ${Number(cameraFPS).toFixed(1)} fps` : " · live");
  stage.style.aspectRatio = `${width} / ${height}`;
}
tickClock();
setInterval(tickClock, 1000);
preview.addEventListener("load", showMode);

// camera.state: {state, and where known width, height, fps, failure}.
function showCamera(camera) {
  if (camera.fps) cameraFPS = camera.fps;
  cameraState.textContent = camera.state === "failed" || camera.state === "gone"
    ? `camera: ${camera.failure || camera.reason || camera.state}`
    : camera.state === "idle" ? "camera idle" : "";
  showMode();
}
// storage.state: {state: ok|low|full, reason}.
function showStorage(storage) {
  storageState.textContent = storage.state === "ok" ? "" : `storage ${storage.state}: ${storage.reason || ""}`;
  if (storage.state === "full") showError(new Error(storageState.textContent));
}

// Jobs scheduled or running, by id: listed once, then kept by job.* events.
const activeJobs = new Map();
let intervalJob = null;
const jobKind = (job) => job.kind || (job.spec && job.spec.kind);
const isActive = (job) => job.state === "scheduled" || job.state === "running";
function showJob(job) {
  if (isActive(job)) activeJobs.set(job.id, job);
  else activeJobs.delete(job.id);
  showJobs();
}
function showJobs() {
  const active = [...activeJobs.values()];
  rec.hidden = active.length === 0;
  rec.title = active.map((job) => `job ${job.id} (${jobKind(job)}, ${job.taken} taken)`).join(", ");
  if (intervalJob) {
    if (!activeJobs.has(intervalJob.id)) setIntervalJob(null);
  } else {
    // A job this page started before a reload (or in another tab) can still be stopped here.
    const ours = active.find((job) => jobKind(job) === "interval" && job.label === INTERVAL_LABEL);
    if (ours) setIntervalJob(ours);
  }
}
async function loadJobs() {
  const jobs = (await api("GET", "/jobs")).items;
  activeJobs.clear();
  for (const job of jobs) if (isActive(job)) activeJobs.set(job.id, job);
  showJobs();
}

function showFlash() {
  flash.hidden = true;
  void flash.offsetWidth; // restarts the animation
  flash.hidden = false;
}
flash.addEventListener("animationend", () => { flash.hidden = true; });

// ---- the preview: the MJPEG stream, or frame by frame where multipart is not shown.
let streaming = false, framesFallback = false, fetchingFrames = false, frameURL = null;
function startPreview() {
  streaming = true;
  if (framesFallback) fetchFrames();
  else preview.src = "/preview.mjpg";
}
function stopPreview() {
  // Closing the stream lets the daemon stop encoding frames nobody sees.
  streaming = false;
  if (!framesFallback) preview.removeAttribute("src");
}
preview.addEventListener("error", () => {
  if (!streaming || framesFallback) return;
  framesFallback = true;
  fetchFrames();
});
async function fetchFrames() {
  if (fetchingFrames) return;
  fetchingFrames = true;
  try {
    while (streaming && !document.hidden) {
      try {
        const response = await fetch("/preview.jpg?fresh=true", { cache: "no-store" });
        if (!response.ok) throw new APIError(response.status, `preview: HTTP ${response.status}`);
        const url = URL.createObjectURL(await response.blob());
        preview.src = url;
        await preview.decode().catch(() => {});
        if (frameURL) URL.revokeObjectURL(frameURL);
        frameURL = url;
      } catch (error) {
        pollFailed(error);
        await sleep(FRAME_RETRY_MS);
      }
    }
  } finally {
    fetchingFrames = false;
  }
}

// ---- the gallery: newest first, pages on scroll, kept current by picture.* events.
const tiles = new Map();
let newestID = 0, nextPage = null, loadingMore = false;
const takenAt = (record) => new Date(record.taken_at).toLocaleString();

function addRecord(record) {
  if (tiles.has(record.id)) return;
  const item = document.createElement("li");
  item.dataset.id = record.id;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "thumb";
  const image = document.createElement("img");
  image.loading = "lazy";
  image.decoding = "async";
  image.width = THUMB_WIDTH;
  image.height = Math.round(THUMB_WIDTH * record.height / Math.max(1, record.width));
  image.alt = `Picture ${record.id}, taken ${takenAt(record)}`;
  image.src = `${record.url}?width=${THUMB_WIDTH}`;
  button.append(image);
  button.addEventListener("click", () => openViewer(record));
  item.append(button);
  // Newest first: older pages go after the last tile, anything newer before the first
  // tile with a smaller id (at once for a new picture).
  const last = gallery.lastElementChild;
  if (!last || Number(last.dataset.id) > record.id) {
    gallery.append(item);
  } else {
    let before = gallery.firstElementChild;
    while (Number(before.dataset.id) > record.id) before = before.nextElementSibling;
    gallery.insertBefore(item, before);
  }
  tiles.set(record.id, item);
  newestID = Math.max(newestID, record.id);
  empty.hidden = true;
}
function removeRecord(id) {
  const item = tiles.get(id);
  if (!item) return;
  item.remove();
  tiles.delete(id);
  empty.hidden = tiles.size > 0 || nextPage !== null;
}

async function loadFirstPage() {
  const data = await api("GET", `/library?limit=${PAGE_SIZE}`);
  for (const id of [...tiles.keys()]) removeRecord(id);
  data.items.forEach(addRecord);
  nextPage = data.next;
  empty.hidden = tiles.size > 0 || nextPage !== null;
  loadMoreIfNear();
}

async function loadMore() {
  if (!nextPage || loadingMore) return;
  loadingMore = true;
  try {
    const data = await api("GET", nextPage);
    data.items.forEach(addRecord);
    nextPage = data.next;
  } catch (error) {
    showError(error);
    return;
  } finally {
    loadingMore = false;
  }
  loadMoreIfNear();
}
function loadMoreIfNear() {
  if (nextPage && more.getBoundingClientRect().top < innerHeight + 600) loadMore();
}
new IntersectionObserver((entries) => {
  if (entries.some((entry) => entry.isIntersecting)) loadMore();
}, { rootMargin: "600px" }).observe(more);

function updateRecord(record) {
  const item = tiles.get(record.id);
  if (!item) return;
  const button = item.querySelector("button");
  const fresh = button.cloneNode(true);
  fresh.addEventListener("click", () => openViewer(record));
  button.replaceWith(fresh);
}

// ---- the viewer: full size, Download and Delete.
let viewing = null;
function openViewer(record) {
  viewing = record;
  full.width = record.width;
  full.height = record.height;
  full.alt = `Picture ${record.id}, taken ${takenAt(record)}`;
  full.src = record.url;
  const job = record.job_id ? ` · job ${record.job_id}` : "";
  const label = record.label ? ` · ${record.label}` : "";
  caption.textContent = `#${record.id}${label} · ${takenAt(record)} · ${record.width}×${record.height}`
    + ` · ${Math.round(record.bytes / 1024)} KB${job}`;
  download.href = record.url;
  download.download = `shutter-${record.id}.jpg`;
  viewer.showModal();
}
closeButton.addEventListener("click", () => viewer.close());
viewer.addEventListener("click", (event) => { if (event.target === viewer) viewer.close(); });
viewer.addEventListener("close", () => { full.removeAttribute("src"); viewing = null; });
deleteButton.addEventListener("click", async () => {
  if (!viewing || !confirm(`Delete picture ${viewing.id}? This cannot be undone.`)) return;
  const id = viewing.id;
  try {
    await api("DELETE", `/library/${id}`);
    removeRecord(id);
    viewer.close();
  } catch (error) {
    if (error.status === 404) {
      removeRecord(id);
      viewer.close();
    }
    showError(error);
  }
});

// ---- the toolbar.
const controls = [snapButton, delayedButton, delaySelect, everyInput, startStopButton, libraryButton];
function setBusy(busy) {
  for (const control of controls) control.disabled = busy;
  if (!busy) everyInput.disabled = intervalJob !== null;
}

snapButton.addEventListener("click", async () => {
  try {
    addRecord(await api("POST", "/snap"));
    showFlash();
  } catch (error) {
    showError(error);
  }
});

delayedButton.addEventListener("click", async () => {
  const delay = Number(delaySelect.value);
  const deadline = performance.now() + delay * 1000;
  setBusy(true);
  const show = () => {
    const left = Math.ceil((deadline - performance.now()) / 1000);
    countdown.textContent = String(Math.max(left, 1));
    countdown.hidden = left <= 0;
  };
  show();
  const timer = setInterval(show, 100);
  try {
    // wait=true: the answer is the picture, once taken, so it shows at once.
    addRecord(await api("POST", "/snap", { delay, wait: true }));
    showFlash();
  } catch (error) {
    showError(error);
  } finally {
    clearInterval(timer);
    countdown.hidden = true;
    setBusy(false);
  }
});

function setIntervalJob(job) {
  intervalJob = job;
  startStopButton.textContent = job ? "Stop" : "Start";
  startStopButton.setAttribute("aria-pressed", job ? "true" : "false");
  everyInput.disabled = job !== null || delayedButton.disabled;
}
async function startInterval(every) {
  const spec = { kind: "interval", every, count: INTERVAL_SHOTS, label: INTERVAL_LABEL };
  try {
    return await api("POST", "/jobs", spec);
  } catch (error) {
    const limit = error.status === 400 && /count.* 1 to (\d+)/.exec(error.message);
    if (!limit) throw error;
    return await api("POST", "/jobs", { ...spec, count: Number(limit[1]) });
  }
}
startStopButton.addEventListener("click", async () => {
  startStopButton.disabled = true;
  try {
    if (intervalJob) {
      await api("DELETE", `/jobs/${intervalJob.id}`);
      setIntervalJob(null);
    } else {
      // An empty or invalid field is sent as it is, so the daemon's sentence names it.
      setIntervalJob(await startInterval(everyInput.value === "" ? null : Number(everyInput.value)));
    }
  } catch (error) {
    showError(error);
  } finally {
    startStopButton.disabled = delayedButton.disabled;
  }
});

libraryButton.addEventListener("click", () => {
  library.scrollIntoView({ behavior: "smooth" });
  library.focus({ preventScroll: true });
});

// ---- the change feed: /events instead of polling. The browser's EventSource reconnects by
// itself and sends Last-Event-ID, so the daemon replays what happened meanwhile (a restart
// included); a reset says the page fell behind the kept history and lists everything again.
const handlers = {
  "picture.created": addRecord,
  "picture.deleted": (data) => removeRecord(data.id),
  "picture.updated": updateRecord,
  "job.created": showJob,
  "job.updated": showJob,
  "job.ended": showJob,
  "camera.state": showCamera,
  "storage.state": showStorage,
};
let events = null, lastEventID = null, listed = false;
// Events that arrive while the page lists the library and the jobs wait, then apply in order,
// so a picture deleted during the listing does not come back from it.
let waiting = [];
function handle(type, message) {
  if (message.lastEventId) lastEventID = message.lastEventId;
  const data = JSON.parse(message.data);
  const apply = () => (type === "reset" ? relist() : handlers[type](data));
  if (listed) apply();
  else waiting.push(apply);
}
async function relist() {
  listed = false;
  try {
    await Promise.all([loadFirstPage(), loadJobs()]);
    lastPollError = "";
  } catch (error) {
    pollFailed(error);
  }
  listed = true;
  const queued = waiting;
  waiting = [];
  queued.forEach((apply) => apply());
}
function openEvents() {
  // A new EventSource cannot send Last-Event-ID itself: the query carries it.
  const query = lastEventID ? `?last_event_id=${encodeURIComponent(lastEventID)}` : "";
  events = new EventSource(`/events${query}`);
  for (const type of [...Object.keys(handlers), "reset"]) {
    events.addEventListener(type, (message) => handle(type, message));
  }
  events.addEventListener("open", () => {
    lastPollError = "";
    // Listed once the stream is open, so nothing falls between the listing and the events.
    if (!listed && waiting.length === 0 && lastEventID === null) relist();
  });
  events.addEventListener("error", () => {
    if (events.readyState !== EventSource.CLOSED) return;  // reconnecting by itself
    // Given up (the daemon answered with an error): open it again shortly, from the last id.
    pollFailed(new Error("shutterd is not reachable"));
    setTimeout(openEvents, RECONNECT_MS);
  });
}

document.addEventListener("visibilitychange", () => {
  if (document.hidden) stopPreview();
  else startPreview();
});

startPreview();
openEvents();
