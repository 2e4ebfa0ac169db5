"""archzoo plugin: OpenAI Whisper, the speech encoder-decoder, as transformers 5.23 builds it (model type ``whisper``)."""
