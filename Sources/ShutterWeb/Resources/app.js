"use strict";
const $ = (id) => document.getElementById(id);
const preview = $("preview"), stage = $("stage"), clock = $("clock"), mode = $("mode");
const rec = $("rec"), countdown = $("countdown"), flash = $("flash");
const cameraState = $("camera-state"), toast = $("toast");
const snapButton = $("snap"), delayedButton = $("delayed"), delaySelect = $("delay");
const everyInput = $("every"), startStopButton = $("startstop");
const libraryButton = $("library-button"), library = $("library");
const gallery = $("gallery"), more = $("more"), empty = $("empty");
const viewer = $("viewer"), full = $("full"), caption = $("caption");
const download = $("download"), deleteButton = $("delete"), closeButton = $("close");

const POLL_MS = 1000;
const PAGE_SIZE = 36;
const THUMB_WIDTH = 320;
// Interval jobs must end (max_job_shots, 10000 by default); a lower limit is read from the refusal.
const INTERVAL_SHOTS = 10000;
const INTERVAL_LABEL = "web page";
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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

// ---- errors: a toast, never swallowed; a failing poll is reported once until it changes.
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

// ---- the overlay: clock, size and measured fps, the job indicator, the countdown.
function tickClock() {
  const now = new Date();
  clock.dateTime = now.toISOString();
  clock.textContent = now.toLocaleTimeString();
}
tickClock();
setInterval(tickClock, 1000);

let lastFrames = null;
async function pollStatus() {
  const camera = (await api("GET", "/status")).camera;
  const now = performance.now();
  let fps = camera.fps;
  if (lastFrames && now - lastFrames.at > 200 && camera.frames_captured >= lastFrames.count) {
    fps = (camera.frames_captured - lastFrames.count) * 1000 / (now - lastFrames.at);
  }
  lastFrames = { count: camera.frames_captured, at: now };
  mode.textContent = `${camera.width}×${camera.height} · ${fps.toFixed(1)} fps`;
  mode.title = `${camera.name}, asked for ${camera.fps} fps`;
  if (camera.width > 0 && camera.height > 0) stage.style.aspectRatio = `${camera.width} / ${camera.height}`;
  cameraState.textContent = camera.state === "failed" ? `camera: ${camera.failure}`
    : camera.state === "idle" ? "camera idle" : "";
}

let intervalJob = null;
async function pollJobs() {
  const jobs = (await api("GET", "/jobs")).items;
  const active = jobs.filter((job) => job.state === "scheduled" || job.state === "running");
  rec.hidden = active.length === 0;
  rec.title = active.map((job) => `job ${job.id} (${job.kind}, ${job.taken} taken)`).join(", ");
  if (intervalJob) {
    if (!active.some((job) => job.id === intervalJob.id)) setIntervalJob(null);
  } else {
    // A job this page started before a reload (or in another tab) can still be stopped here.
    const ours = active.find((job) => job.kind === "interval" && job.label === INTERVAL_LABEL);
    if (ours) setIntervalJob(ours);
  }
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
        await sleep(POLL_MS);
      }
    }
  } finally {
    fetchingFrames = false;
  }
}

// ---- the gallery: newest first, pages on scroll, new pictures polled with If-None-Match.
const tiles = new Map();
let newestID = 0, nextPage = null, libraryTag = null, loadingMore = false;
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
  const { response, data } = await request("GET", `/library?limit=${PAGE_SIZE}`);
  libraryTag = response.headers.get("ETag");
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

async function pollLibrary() {
  if (libraryTag === null) return loadFirstPage();
  // One ETag covers every listing and changes only when a picture is added or deleted,
  // so an idle poll is a 304 that never touches the catalog.
  const headers = libraryTag ? { "If-None-Match": libraryTag } : {};
  const { response, data } = await request("GET", `/library?after=${newestID}&limit=500`, { headers });
  if (response.status === 304) return;
  let page = data, added = 0;
  for (;;) {
    page.items.forEach(addRecord);
    added += page.items.length;
    if (!page.next) break;
    page = await api("GET", page.next);
  }
  if (added === 0) await dropDeleted();
  libraryTag = response.headers.get("ETag");
}
async function dropDeleted() {
  // Nothing new but the listing changed: pictures were deleted elsewhere (or by retention).
  const loaded = [...tiles.keys()].sort((a, b) => b - a);
  if (loaded.length === 0) return;
  const data = await api("GET", `/library?limit=${Math.min(500, loaded.length)}`);
  const present = new Set(data.items.map((record) => record.id));
  const oldestListed = data.next ? Math.min(...present) : 0;
  for (const id of loaded) if (id >= oldestListed && !present.has(id)) removeRecord(id);
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
  pollJobs().catch(pollFailed);
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
  pollJobs().catch(pollFailed);
  pollLibrary().catch(pollFailed);
});

libraryButton.addEventListener("click", () => {
  library.scrollIntoView({ behavior: "smooth" });
  library.focus({ preventScroll: true });
});

// ---- polling, only while the page is visible.
let polling = false;
async function pollLoop() {
  if (polling) return;
  polling = true;
  try {
    while (!document.hidden) {
      const results = await Promise.allSettled([pollStatus(), pollJobs(), pollLibrary()]);
      const failure = results.find((result) => result.status === "rejected");
      if (failure) pollFailed(failure.reason);
      else lastPollError = "";
      await sleep(POLL_MS);
    }
  } finally {
    polling = false;
  }
}
document.addEventListener("visibilitychange", () => {
  if (document.hidden) {
    stopPreview();
  } else {
    startPreview();
    pollLoop();
  }
});

startPreview();
loadFirstPage().catch(showError).finally(pollLoop);
