FROM agentenv-test/python:bookworm-1
COPY notes_server.py /opt/notes/server.py
