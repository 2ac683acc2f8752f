;;; eglot_session.el --- drive cleveragents-lsp from Emacs's own LSP client, in batch.
;; The server's command line comes in CLEVERAGENTS_CMD (a JSON array), the workspace in
;; CLEVERAGENTS_WORKSPACE. Prints one line per step; exits 0 when every step held.

(require 'package)
(package-initialize)  ; Debian's elpa-eglot lives in the system's package directory
(require 'eglot)
(require 'json)

(defun ca-fail (format-string &rest args)
  (princ (concat "FAIL " (apply #'format format-string args) "\n"))
  (kill-emacs 1))

(condition-case err
    (let* ((root (file-name-as-directory (getenv "CLEVERAGENTS_WORKSPACE")))
           (command (append (json-read-from-string (getenv "CLEVERAGENTS_CMD")) nil))
           (default-directory root)
           (eglot-sync-connect 30)
           (eglot-connect-timeout 60))
      (find-file (expand-file-name "notes.txt" root))
      (text-mode)
      (let* ((server (eglot '(text-mode) (cons 'transient root) 'eglot-lsp-server command "plaintext"))
             (process (jsonrpc--process server))
             (health (jsonrpc-request server :_cleveragents/health/check (make-hash-table) :timeout 30))
             (session (jsonrpc-request server :session.create (list :actor_name "local/default") :timeout 30)))
        (princ (format "CONNECTED %s\n" (plist-get (eglot--server-info server) :name)))
        (unless (equal (plist-get health :status) "ok") (ca-fail "health: %S" health))
        (princ (format "HEALTH %s\n" (plist-get health :status)))
        (unless (stringp (plist-get session :session_id)) (ca-fail "session.create: %S" session))
        (princ (format "SESSION %s\n" (plist-get session :session_id)))
        (jsonrpc-notify server :workspace/didChangeConfiguration (list :settings (make-hash-table)))
        (princ "NOTIFIED\n")
        ;; eglot-shutdown's own two messages (shutdown and exit, both with null params),
        ;; then a wait: its jsonrpc-shutdown (Emacs 28) deletes the process right after
        ;; `exit' is sent, so the server's own exit code is only seen when we wait for it.
        (setf (eglot--shutdown-requested server) t)
        (let ((answer (jsonrpc-request server :shutdown nil :timeout 10)))
          (when answer (ca-fail "shutdown answered %S, not null" answer)))
        (princ "SHUTDOWN null\n")
        (jsonrpc-notify server :exit nil)
        (let ((deadline (+ (float-time) 30)))
          (while (and (process-live-p process) (< (float-time) deadline))
            (accept-process-output nil 0.1)))
        (when (process-live-p process) (ca-fail "the server is still running after shutdown"))
        (princ (format "EXITED %s %d\n" (process-status process) (process-exit-status process)))
        (unless (and (eq (process-status process) 'exit) (= (process-exit-status process) 0))
          (ca-fail "the server exited %S %d" (process-status process) (process-exit-status process)))
        (princ "ALL PASSED\n")
        (kill-emacs 0)))
  (error (ca-fail "%S" err)))
