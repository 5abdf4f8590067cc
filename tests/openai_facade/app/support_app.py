"""A small application written against plain openai (the facade's tests switch its import line)."""

from __future__ import annotations

import openai
from openai import OpenAI


def make_client(base_url: str, api_key: str) -> OpenAI:
    return OpenAI(base_url=base_url, api_key=api_key)


def answer(client: OpenAI, question: str) -> str:
    try:
        completion = client.chat.completions.create(
            model="hermes-agent", messages=[{"role": "system", "content": "Be brief."},
                                            {"role": "user", "content": question}], temperature=0.2)
    except openai.AuthenticationError:
        return "the assistant's key was refused"
    except openai.APIConnectionError:
        return "the assistant is unreachable; try again later"
    return completion.choices[0].message.content or ""


def stream_answer(client: OpenAI, question: str) -> str:
    stream = client.chat.completions.create(model="hermes-agent", stream=True,
                                            messages=[{"role": "user", "content": question}])
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
