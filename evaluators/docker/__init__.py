"""The Docker backend: a pool of warm, locked-down containers of the sandbox image, the
image's build, and the host's end of the stream to each container's agent. The folder
also holds the image's inputs (package data): the Dockerfiles, build-base.sh, the
package lists and agent.py, which runs in the container."""
