# Parallax: `make run` serves the embedded default, `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
HOST ?= 127.0.0.1
PORT ?= 8000

# Services the suite uses (already running on the project's machines and in CI).
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

.PHONY: run test install lint fmt demo worker train evaluate bench screenshots clean

$(BIN)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, pinned: the CPU build on this machine's disk (a looser pin pulls CUDA).
	$(PY) -m pip install --quiet torch==2.13.0
	# llama-cpp-python is compiled from source (about 10 minutes on 2 cores the first time; pip
	# caches the wheel): installed on its own and not quiet, so the build shows it is running.
	# For this machine's CPU (AVX-512 where it has it: the narrative's bfloat16 weights need it
	# to batch); CMAKE_ARGS=-DGGML_NATIVE=OFF builds a wheel for any x86-64 with AVX2.
	@echo "Installing llama-cpp-python: the first build compiles llama.cpp (about 10 minutes)."
	CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=ON}" $(PY) -m pip install --progress-bar on \
		"$$(grep -m1 '^llama-cpp-python' requirements-dev.txt)"
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(BIN)/.installed

run: install
	DEBUG=true $(PY) manage.py migrate --noinput
	DEBUG=true $(PY) manage.py load_demo
	# Covers rendered by the world model for worlds without one or made by other weights (a no-op once done).
	DEBUG=true $(PY) manage.py render_covers
	DEBUG=true COVER_RENDER_AUTO=$${COVER_RENDER_AUTO:-true} $(BIN)/daphne -b $(HOST) -p $(PORT) gallery.asgi:application

test: install
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
	CELERY_TASK_ALWAYS_EAGER=$${CELERY_TASK_ALWAYS_EAGER:-true} \
	$(BIN)/pytest $(PYTEST_ARGS)
	$(BIN)/lint-imports

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

demo: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo

worker: install
	$(PY) manage.py inference_worker

train: install
	$(PY) -m inference.training.train

evaluate: install
	$(PY) -m inference.evaluate --json var/eval.json

bench: install
	$(PY) bench/inference.py
	$(PY) bench/gallery.py
	$(PY) bench/play.py
	$(PY) bench/narrative.py

# PNGs of the main pages at desktop and phone sizes in var/screenshots/: starts its own server
# (the embedded default on a throw-away database, with the demo catalog) and Debian's Chromium.
screenshots: install
	$(PY) -m tests.browser.screenshots

clean:
	rm -rf var/parallax.sqlite3 var/media var/static
