"""A scripted hermes-agent conversation, no model: hermes's own MemoryManager calls the hooks in hermes's order.

Run by tests/test_hermes_provider.py as `python -P conversation.py OUT.json` with $HERMES_HOME set to a home whose
config.yaml selects `memory.provider: memwiki` (`-P`: hermes's top-level `plugins` package, not memwiki's, must be
the one imported). Each turn: on_turn_start, prefetch, the model's memory-tool call (hermes's own `memory_tool` on
its own MEMORY.md / USER.md, then notify_memory_tool_write), sync_turn with the transcript, queue_prefetch; then
/new, /resume and exit. Writes what hermes saw (prefetch blocks, tool results, tool names) to OUT.json.
"""

from __future__ import annotations

import json
import os
import sys

from agent.memory_manager import MemoryManager
from hermes_cli.config import load_config
from plugins.memory import load_memory_provider
from tools.memory_tool import MemoryStore, memory_tool

SESSION = "hermes-s1"
ROW = "its BMC answers on the management VLAN and its disks are mirrored to the NAS in the same room every night"


def main(out_path: str) -> None:
    config = load_config()["memory"]
    provider = load_memory_provider(config["provider"])
    assert provider is not None and provider.is_available(), "hermes did not load the memwiki provider"
    manager = MemoryManager()
    manager.add_provider(provider)
    home = os.environ["HERMES_HOME"]
    manager.initialize_all(session_id=SESSION, platform="cli", hermes_home=home, agent_context="primary")
    files = MemoryStore(memory_char_limit=config["memory_char_limit"], user_char_limit=config["user_char_limit"])
    files.load_from_disk()
    seen: dict = {"provider": type(provider).__module__, "tools": [s["name"] for s in manager.get_all_tool_schemas()]}
    seen["system"] = manager.build_system_prompt()
    messages: list[dict] = []
    turns = [
        ("我习惯先看命令再看解释", [{"action": "add", "target": "user", "content": "林晓习惯先看命令再看解释。"}]),
        (
            "Note down the lab hosts for me",
            [
                {
                    "action": "add",
                    "target": "memory",
                    "content": f"[network] lab host {n:02d} sits in rack {n} of row B; {ROW}",
                }
                for n in range(12)
            ],
        ),
        ("ok", []),
        ("Where is the blog hosted?", []),
    ]
    seen["prefetch"], seen["memory_tool"] = [], []
    for n, (user, writes) in enumerate(turns, 1):
        manager.on_turn_start(n, user)
        seen["prefetch"].append(manager.prefetch_all(user))
        messages.append({"role": "user", "content": user})
        for k, args in enumerate(writes):
            call_id = f"call-{n}-{k}"
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "memory", "arguments": json.dumps(args)},
                        }
                    ],
                }
            )
            result = memory_tool(**args, store=files)
            seen["memory_tool"].append(json.loads(result))
            manager.notify_memory_tool_write(result, args, build_metadata=lambda: {"session_id": SESSION})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        reply = f"Done ({n})."
        messages.append({"role": "assistant", "content": reply})
        manager.sync_all(user, reply, session_id=SESSION, messages=list(messages))
        manager.queue_prefetch_all(user, session_id=SESSION)
        manager.flush_pending(timeout=30)
    seen["kg_add"] = json.loads(
        manager.handle_tool_call(
            "memwiki_kg_add", {"subject": "blog", "predicate": "hosted_on", "object": "Cloudflare Pages"}
        )
    )
    seen["kg_query"] = json.loads(manager.handle_tool_call("memwiki_kg_query", {"entity": "blog"}))
    seen["kg_bad"] = json.loads(manager.handle_tool_call("memwiki_kg_query", {"entity": "blog", "as_of": "soon"}))
    manager.commit_session_boundary_async(
        messages, new_session_id="hermes-s2", parent_session_id=SESSION, reason="new_session"
    )
    manager.flush_pending(timeout=30)
    manager.on_turn_start(1, "新会话")
    manager.sync_all("新会话里的第一句", "好的。", session_id="hermes-s2", messages=[])
    manager.flush_pending(timeout=30)
    manager.on_session_switch(SESSION, parent_session_id="hermes-s2", reset=False, reason="resume")
    manager.on_session_end(messages)
    manager.shutdown_all()
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(seen, f, ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv[1])
